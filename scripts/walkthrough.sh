#!/usr/bin/env bash
# A first session with the Cluster Management Service, end to end, with curl:
#   a personal access token -> an organisation -> an environment -> a cloud account with credentials ->
#   a cluster (waits until it is started) -> a node pool -> delete the cluster -> revoke the token.
#
# Usage:  BASE=http://localhost:8080 scripts/walkthrough.sh
#   The token is ADMIN_TOKEN, else the file $DATA_DIR/admin-token, else .data/admin-token.
#   The first step that fails stops the script, printing its request, status and answer.
# Needs curl and node (npm start brings node). A test runs this script against a started service (npm test),
# so it stays true. With the default PROVISIONING_STEP_SECONDS=5 a cluster takes about a minute to start.
set -euo pipefail

BASE=${BASE:-http://localhost:8080}
BASE=${BASE%/}
RUN=${RUN:-$(date +%s)}          # makes names unique, so the script can run more than once
WAIT_SECONDS=${WAIT_SECONDS:-300}

# The administrator's token: ADMIN_TOKEN, else $DATA_DIR/admin-token, else .data/admin-token (where the service
# writes it on its first start with the embedded database).
if [ -z "${ADMIN_TOKEN:-}" ]; then
  for file in ${DATA_DIR:+"$DATA_DIR/admin-token"} .data/admin-token; do
    if [ -r "$file" ]; then ADMIN_TOKEN=$(tr -d '[:space:]' < "$file"); break; fi
  done
fi
if [ -z "${ADMIN_TOKEN:-}" ]; then
  echo "No administrator token: set ADMIN_TOKEN, or DATA_DIR to the service's data directory (its admin-token file)," >&2
  echo "or run this from the directory holding .data/admin-token." >&2
  exit 1
fi

# json <expression on `j`>: reads JSON from stdin and prints the expression, e.g. json 'j.identity'.
# Empty input means the request before it failed (and said so): it stops quietly. Anything else that goes wrong is
# one line, not a stack trace.
json() {
  node -e '
    let s = "";
    process.stdin.on("data", (d) => (s += d)).on("end", () => {
      if (s.trim() === "") process.exit(1);
      let j;
      try { j = JSON.parse(s); } catch { console.error(`Expected JSON, got: ${s.slice(0, 500)}`); process.exit(1); }
      let v;
      try { v = (0, eval)(`(j) => (${process.argv[1]})`)(j); } catch (e) { console.error(`Could not read ${process.argv[1]} from: ${s.slice(0, 500)} (${e.message})`); process.exit(1); }
      if (v === undefined) { console.error(`Found no ${process.argv[1]} in: ${s.slice(0, 500)}`); process.exit(1); }
      process.stdout.write(typeof v === "string" ? v : JSON.stringify(v));
    });' "$1"
}

# call METHOD PATH TOKEN [BODY]: prints the answer; on a failed request or any status >= 400 it prints the
# request, the status and the answer, and stops the script.
call() {
  local method=$1 path=$2 token=$3 body=${4:-}
  local out status
  out=$(mktemp)
  local args=(-sS -o "$out" -w '%{http_code}' -X "$method" "$BASE$path" -H "Authorization: Token $token")
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data-binary "$body"); fi
  if ! status=$(curl "${args[@]}"); then
    echo "FAILED: $method $BASE$path: no answer (is the service running at $BASE?)" >&2
    rm -f "$out"
    exit 1
  fi
  if [ "$status" -ge 400 ]; then
    {
      echo "FAILED: $method $path"
      if [ -n "$body" ]; then echo "  request body: $body"; fi
      echo "  status: $status"
      echo "  answer: $(cat "$out")"
    } >&2
    rm -f "$out"
    exit 1
  fi
  cat "$out"
  rm -f "$out"
}

echo "1. A personal access token for yourself (the value is shown only in this response)"
TOKEN_RESPONSE=$(call POST /sts/v1/personal-access-tokens "$ADMIN_TOKEN" "{\"name\":\"walkthrough-$RUN\",\"type\":{\"name\":\"FULL_ACCESS\"}}")
PAT=$(echo "$TOKEN_RESPONSE" | json 'j.token')
PAT_ID=$(echo "$TOKEN_RESPONSE" | json 'j.id')
echo "   token id $PAT_ID"

echo "2. An organisation (you become its OWNER)"
ORG=$(call POST /api/v1/organisations "$PAT" "{\"organisationName\":\"Walkthrough $RUN\",\"organisationType\":\"BUSINESS\",
  \"contactEmail\":{\"email\":\"ops@walkthrough.example\"},
  \"acceptedAgreements\":[{\"agreementSlug\":\"terms-of-service\"},{\"agreementSlug\":\"data-processing-agreement\"}]}" | json 'j.slug.slugValue')
echo "   organisation $ORG"

echo "3. An environment"
ENV=$(call POST "/api/v1/orgs/$ORG/environments" "$PAT" '{"name":"production","type":"production"}' | json 'j.slug.slugValue')
echo "   environment $ENV"

echo "4. Cloud profiles you can use, then a cloud account on the first platform_1 profile"
PROFILE=$(call GET "/api/v1/orgs/$ORG/cloud-profiles" "$PAT" | json "j.content.find(p => p.type === 'platform_1').identity")
echo "   cloud profile $PROFILE"
ACCOUNT=$(call POST "/api/v1/orgs/$ORG/cloud-accounts" "$PAT" "{\"cloudProfile\":\"$PROFILE\",\"displayName\":\"Main account\"}" | json 'j.identity')
echo "   cloud account $ACCOUNT"
call POST "/api/v1/orgs/$ORG/cloud-accounts/$ACCOUNT/credentials/platform_1" "$PAT" \
  '{"displayName":"deployer","credentials":{"accessKeyId":"AKIAEXAMPLE","accessKeySecret":"example-secret"}}' > /dev/null
echo "   credentials added (the secret is never shown again)"

echo "5. A region and a node type of that platform, and an available version"
REGION=$(call GET "/api/v1/orgs/$ORG/cloud-providers/platform_1/regions" "$PAT" | json 'j.content.find(r => r.available && !r.restricted).slug')
NODE_TYPE=$(call GET "/api/v1/cloud-providers/platform_1/nodetypes?sort=cpu,asc" "$PAT" | json 'j.content[0].type')
VERSION=$(call GET /api/v1/cluster-versions "$PAT" | json 'j.filter(v => v.available).pop().version')
echo "   region $REGION, node type $NODE_TYPE, version $VERSION"

echo "6. A cluster"
CLUSTER=$(call POST "/api/v1/orgs/$ORG/clusters/$ENV" "$PAT" "{\"name\":\"web\",\"cloudAccountIdentity\":\"$ACCOUNT\",
  \"region\":\"$REGION\",\"version\":\"$VERSION\",
  \"nodePools\":[{\"name\":\"default\",\"nodeSize\":\"$NODE_TYPE\",\"minSize\":2,\"maxSize\":4}]}" | json 'j.slug.slugValue')
echo "   cluster $ENV/$CLUSTER: new -> provisioning -> provisioned -> starting -> started"

echo "7. Waiting for it to start (about a minute with the default step time)"
STATUS=""
for _ in $(seq 1 "$WAIT_SECONDS"); do
  STATUS=$(call GET "/api/v1/orgs/$ORG/clusters/$ENV/$CLUSTER?includeDetails=true" "$PAT" | json '`${j.status} ${j.provisionStatus}`')
  echo "   $STATUS"
  case "$STATUS" in started*) break ;; unknown*) echo "   the driver reported a fault" >&2; exit 1 ;; esac
  sleep 1
done
case "$STATUS" in started*) ;; *) echo "the cluster did not start in ${WAIT_SECONDS}s" >&2; exit 1 ;; esac

echo "8. A second node pool"
call POST "/api/v1/orgs/$ORG/clusters/$ENV/$CLUSTER/pools" "$PAT" "{\"name\":\"batch\",\"nodeSize\":\"$NODE_TYPE\",\"minSize\":1,\"maxSize\":3}" \
  | json '`   pool ${j.name} (id ${j.id})`'
echo

echo "9. Delete the cluster (the reconciler takes it to deleted)"
call PATCH "/api/v1/orgs/$ORG/clusters/$ENV/$CLUSTER" "$PAT" '{"status":"deleting"}' | json '`   desiredStatus ${j.desiredStatus}`'
echo

echo "10. The audit trail of the cluster"
call GET "/api/v1/orgs/$ORG/audit-events/$ENV/$CLUSTER" "$PAT" | json 'j.content.map(e => `   ${e.createdAt} ${e.actorUsername} ${e.type}`).join("\n")'
echo

echo "11. Revoke the token (by the id kept in step 1)"
call DELETE "/sts/v1/personal-access-tokens/$PAT_ID" "$PAT" | json '`   ${j.message}`'
echo
echo "Done."
