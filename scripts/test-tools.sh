#!/usr/bin/env bash
# The programs `npm test` needs besides Node.js, installed from Debian's packages when missing (it runs as `pretest`,
# and .ci/run runs it too):
# - kubectl (package kubernetes-client): test/operations renders deploy/overlays with `kubectl kustomize`;
# - promtool (package prometheus, of which only promtool is used): the alerting rules are checked and unit-tested
#   with `promtool check rules` and `promtool test rules`, and a scrape with `promtool check metrics`.
# Where apt-get cannot be used (another system, no root and no sudo), it says what is missing and leaves it: the tests
# that need a program then fail naming it (PROMTOOL may point at a promtool binary).
set -uo pipefail
missing=()
command -v kubectl >/dev/null 2>&1 || [ -n "${KUBECTL:-}" ] || missing+=(kubernetes-client)
command -v promtool >/dev/null 2>&1 || [ -n "${PROMTOOL:-}" ] || missing+=(prometheus)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="none"; fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$SUDO" = "none" ]; then
  echo "npm test needs Debian's packages ${missing[*]} (kubectl, promtool), which are missing and cannot be installed here; install them, or the tests that use them fail." >&2
  exit 0
fi
echo "Installing Debian's packages ${missing[*]} for npm test (once)..." >&2
$SUDO apt-get update -qq >/dev/null || echo "apt-get update failed; trying the install anyway" >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || { echo "apt-get install ${missing[*]} failed: the tests that use them will fail" >&2; exit 0; }
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  # Only promtool is wanted. Where no policy-rc.d holds it back, the package starts a Prometheus server on :9090:
  # stop that one (by its init script's pid file), and keep it from starting at boot.
  if [ -x /etc/init.d/prometheus ] && /etc/init.d/prometheus status >/dev/null 2>&1; then
    $SUDO /etc/init.d/prometheus stop >/dev/null 2>&1 || true
  fi
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi
exit 0
