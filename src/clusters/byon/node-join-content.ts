import * as ipaddr from 'ipaddr.js';
import { stringify } from 'yaml';
import type { NodeTaint } from '../cluster-node-pool.entity';

/**
 * The files of a bring-your-own-node join config: shell scripts that install (or upgrade) containerd,
 * runc, crictl and the kubelet of the cluster's version, a KubeletConfiguration, cloud-init user data that
 * runs the install script and the join command, and the join command itself. Pure functions of their
 * inputs; the service base64-encodes them. Nothing here is executed by the service.
 */

/** Versions of the node components for one Kubernetes minor. */
export interface NodeComponentVersions {
  containerd: string;
  runc: string;
  crictl: string;
}

/**
 * Node components per Kubernetes minor. The catalog carries no component versions, so these constants are
 * the source (docs/adr/0070-node-join-configs-and-registration.md); a minor not listed uses the newest row.
 */
export const NODE_COMPONENTS_BY_MINOR: Record<string, NodeComponentVersions> = {
  '1.29': { containerd: '1.7.24', runc: '1.2.4', crictl: '1.29.0' },
  '1.30': { containerd: '1.7.24', runc: '1.2.4', crictl: '1.30.1' },
  '1.31': { containerd: '1.7.24', runc: '1.2.4', crictl: '1.31.1' },
  '1.32': { containerd: '2.0.2', runc: '1.2.4', crictl: '1.32.0' },
};

/** The oldest cloud-init release the user data is written for (`write_files` with `encoding: b64`, list `runcmd`). */
export const CLOUD_INIT_VERSION = '24.1';

export function componentsFor(kubernetesVersion: string): NodeComponentVersions {
  const minor = kubernetesVersion.replace(/^v/, '').split('.').slice(0, 2).join('.');
  if (NODE_COMPONENTS_BY_MINOR[minor]) return NODE_COMPONENTS_BY_MINOR[minor];
  const newest = Object.keys(NODE_COMPONENTS_BY_MINOR).sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1])).pop()!;
  return NODE_COMPONENTS_BY_MINOR[newest];
}

export interface NodeJoinInputs {
  /** e.g. `acme/production/web` (comments only). */
  clusterName: string;
  nodePoolName: string;
  nodePoolIdentity: string;
  kubernetesVersion: string;
  components: NodeComponentVersions;
  apiEndpoint: string;
  caCertificate: string;
  /** Service CIDR of the cluster (its tenth address is the cluster DNS). */
  serviceSubnet: string | null;
  labels: Record<string, string>;
  taints: NodeTaint[];
  /** Where the join command registers the node (PUBLIC_API_URL). */
  registrationUrl: string;
}

export const DEFAULT_SERVICE_SUBNET = '10.96.0.0/12';
export const NODE_POOL_LABEL = 'node.cluster-management.example.com/pool';
const INSTALL_DIR = '/var/lib/cluster-management';
const JOIN_HELPER = '/usr/local/bin/cms-node-join';

/** The tenth address of the service subnet (kubeadm's convention for the cluster DNS service). */
export function clusterDnsAddress(serviceSubnet: string | null): string {
  const [net, bits] = ipaddr.parseCIDR(serviceSubnet ?? DEFAULT_SERVICE_SUBNET);
  const bytes = net.toByteArray();
  const hostBits = (net.kind() === 'ipv4' ? 32 : 128) - bits;
  // Network address (host bits cleared) plus 10.
  for (let i = bytes.length - 1, remaining = hostBits; i >= 0 && remaining > 0; i--, remaining -= 8) {
    bytes[i] &= remaining >= 8 ? 0 : 0xff << remaining;
  }
  let carry = 10;
  for (let i = bytes.length - 1; i >= 0 && carry > 0; i--) {
    const sum = bytes[i] + carry;
    bytes[i] = sum & 0xff;
    carry = sum >> 8;
  }
  return ipaddr.fromByteArray(bytes).toString();
}

/** Single-quoted for a POSIX shell. */
export const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

export function kubeletConfig(inputs: NodeJoinInputs): string {
  return stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: '/etc/kubernetes/pki/ca.crt' },
      },
      authorization: { mode: 'Webhook' },
      cgroupDriver: 'systemd',
      clusterDNS: [clusterDnsAddress(inputs.serviceSubnet)],
      clusterDomain: 'cluster.local',
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      failSwapOn: true,
      rotateCertificates: true,
      serverTLSBootstrap: true,
      staticPodPath: '/etc/kubernetes/manifests',
      registerWithTaints: inputs.taints.map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
    },
    { lineWidth: 0 },
  );
}

/** A Kubernetes label key: optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/**
 * The kubelet's --node-labels: the pool label plus the pool's labels that are valid Kubernetes labels (the
 * kubelet would refuse the others). The character sets leave nothing a shell or systemd would interpret.
 */
export function nodeLabels(inputs: Pick<NodeJoinInputs, 'nodePoolName' | 'labels'>): string {
  const valid = Object.entries(inputs.labels).filter(([k, v]) => k.length <= 253 && LABEL_KEY.test(k) && LABEL_VALUE.test(v));
  return [`${NODE_POOL_LABEL}=${inputs.nodePoolName}`, ...valid.map(([k, v]) => `${k}=${v}`)].join(',');
}

/** Shell functions shared by the install and upgrade scripts. */
function componentFunctions(inputs: NodeJoinInputs): string {
  const { containerd, runc, crictl } = inputs.components;
  const k8s = inputs.kubernetesVersion.replace(/^v/, '');
  return `KUBERNETES_VERSION=${shellQuote(k8s)}
CONTAINERD_VERSION=${shellQuote(containerd)}
RUNC_VERSION=${shellQuote(runc)}
CRICTL_VERSION=${shellQuote(crictl)}

case "$(uname -m)" in
  x86_64) ARCH=amd64 ;;
  aarch64 | arm64) ARCH=arm64 ;;
  *) echo "unsupported architecture: $(uname -m)" >&2; exit 1 ;;
esac
if [ "$(id -u)" -ne 0 ]; then echo "run this script as root" >&2; exit 1; fi

fetch() { curl -fsSL --retry 5 --retry-delay 2 -o "$2" "$1"; }

install_containerd() {
  local tmp; tmp="$(mktemp -d)"
  fetch "https://github.com/containerd/containerd/releases/download/v\${CONTAINERD_VERSION}/containerd-\${CONTAINERD_VERSION}-linux-\${ARCH}.tar.gz" "$tmp/containerd.tar.gz"
  tar -C /usr/local -xzf "$tmp/containerd.tar.gz"
  fetch "https://raw.githubusercontent.com/containerd/containerd/v\${CONTAINERD_VERSION}/containerd.service" /etc/systemd/system/containerd.service
  fetch "https://github.com/opencontainers/runc/releases/download/v\${RUNC_VERSION}/runc.\${ARCH}" "$tmp/runc"
  install -m 0755 "$tmp/runc" /usr/local/sbin/runc
  mkdir -p /etc/containerd
  /usr/local/bin/containerd config default | sed 's/SystemdCgroup = false/SystemdCgroup = true/' > /etc/containerd/config.toml
  rm -rf "$tmp"
}

install_crictl() {
  local tmp; tmp="$(mktemp -d)"
  fetch "https://github.com/kubernetes-sigs/cri-tools/releases/download/v\${CRICTL_VERSION}/crictl-v\${CRICTL_VERSION}-linux-\${ARCH}.tar.gz" "$tmp/crictl.tar.gz"
  tar -C /usr/local/bin -xzf "$tmp/crictl.tar.gz"
  printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\\nimage-endpoint: unix:///run/containerd/containerd.sock\\n' > /etc/crictl.yaml
  rm -rf "$tmp"
}

install_kubelet() {
  local tmp; tmp="$(mktemp -d)"
  fetch "https://dl.k8s.io/release/v\${KUBERNETES_VERSION}/bin/linux/\${ARCH}/kubelet" "$tmp/kubelet"
  install -m 0755 "$tmp/kubelet" /usr/local/bin/kubelet
  rm -rf "$tmp"
}
`;
}

export function installScript(inputs: NodeJoinInputs): string {
  const kubeletConfigB64 = Buffer.from(kubeletConfig(inputs), 'utf8').toString('base64');
  const caB64 = Buffer.from(inputs.caCertificate, 'utf8').toString('base64');
  return `#!/usr/bin/env bash
# Installs a bring-your-own node for node pool ${inputs.nodePoolName} of cluster ${inputs.clusterName}.
# Generated by the cluster management service: Kubernetes ${inputs.kubernetesVersion}, containerd ${inputs.components.containerd},
# runc ${inputs.components.runc}, crictl ${inputs.components.crictl}. Run as root, then run the join command.
set -euo pipefail

${componentFunctions(inputs)}
prepare_host() {
  swapoff -a
  sed -ri '/\\sswap\\s/s/^#?/#/' /etc/fstab
  printf 'overlay\\nbr_netfilter\\n' > /etc/modules-load.d/kubernetes.conf
  modprobe overlay
  modprobe br_netfilter
  printf 'net.bridge.bridge-nf-call-iptables = 1\\nnet.bridge.bridge-nf-call-ip6tables = 1\\nnet.ipv4.ip_forward = 1\\n' > /etc/sysctl.d/90-kubernetes.conf
  sysctl --system > /dev/null
}

configure_kubelet() {
  mkdir -p /etc/kubernetes/pki /etc/kubernetes/manifests /var/lib/kubelet
  echo ${shellQuote(caB64)} | base64 -d > /etc/kubernetes/pki/ca.crt
  echo ${shellQuote(kubeletConfigB64)} | base64 -d > /var/lib/kubelet/config.yaml
  cat > /etc/systemd/system/kubelet.service <<'UNIT'
[Unit]
Description=Kubernetes node agent (kubelet)
Wants=network-online.target containerd.service
After=network-online.target containerd.service

[Service]
ExecStart=/usr/local/bin/kubelet \\
  --config=/var/lib/kubelet/config.yaml \\
  --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \\
  --kubeconfig=/etc/kubernetes/kubelet.conf \\
  --cert-dir=/var/lib/kubelet/pki \\
  --node-labels=${nodeLabels(inputs)}
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
}

install_join_helper() {
  cat > ${JOIN_HELPER} <<'HELPER'
#!/usr/bin/env bash
# Registers this machine with the cluster management service and starts the kubelet.
# Usage: cms-node-join --api-url URL --node-pool IDENTITY --token TOKEN
set -euo pipefail
while [ $# -gt 0 ]; do
  case "$1" in
    --api-url) API_URL="$2"; shift 2 ;;
    --node-pool) NODE_POOL="$2"; shift 2 ;;
    --token) TOKEN="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
: "\${API_URL:?--api-url is required}" "\${NODE_POOL:?--node-pool is required}" "\${TOKEN:?--token is required}"
NAME="$(hostname -s | tr '[:upper:]' '[:lower:]')"
ADDRESS="$(ip -o route get 1.1.1.1 | sed -n 's/.* src \\([^ ]*\\).*/\\1/p')"
KUBELET_VERSION="$(/usr/local/bin/kubelet --version | awk '{print $2}')"
CPU="$(nproc)"
MEMORY="$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)"
BODY="$(printf '{"name":"%s","address":"%s","kubeletVersion":"%s","nodePoolIdentity":"%s","cpu":%s,"memory":%s}' \\
  "$NAME" "$ADDRESS" "$KUBELET_VERSION" "$NODE_POOL" "$CPU" "$MEMORY")"
curl -fsS --retry 5 --retry-delay 3 -X POST "$API_URL/api/v1/node-registrations" \\
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' --data "$BODY" > /dev/null
cat > /etc/kubernetes/bootstrap-kubelet.conf <<EOF
apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: ${inputs.apiEndpoint}
    certificate-authority: /etc/kubernetes/pki/ca.crt
users:
- name: kubelet-bootstrap
  user:
    token: $TOKEN
contexts:
- name: bootstrap
  context: {cluster: cluster, user: kubelet-bootstrap}
current-context: bootstrap
EOF
chmod 0600 /etc/kubernetes/bootstrap-kubelet.conf
systemctl daemon-reload
systemctl enable --now containerd kubelet
echo "node $NAME registered in node pool $NODE_POOL"
HELPER
  chmod 0755 ${JOIN_HELPER}
}

prepare_host
install_containerd
install_crictl
install_kubelet
configure_kubelet
install_join_helper
systemctl daemon-reload
systemctl enable --now containerd
echo "installed: kubelet v\${KUBERNETES_VERSION}, containerd \${CONTAINERD_VERSION}, crictl v\${CRICTL_VERSION}"
`;
}

export function upgradeScript(inputs: NodeJoinInputs): string {
  const kubeletConfigB64 = Buffer.from(kubeletConfig(inputs), 'utf8').toString('base64');
  return `#!/usr/bin/env bash
# Upgrades a bring-your-own node of node pool ${inputs.nodePoolName} (cluster ${inputs.clusterName}) to
# Kubernetes ${inputs.kubernetesVersion}, containerd ${inputs.components.containerd}, runc ${inputs.components.runc}, crictl ${inputs.components.crictl}.
# Drain the node first (kubectl drain NODE --ignore-daemonsets), run this as root, then uncordon it.
set -euo pipefail

${componentFunctions(inputs)}
systemctl stop kubelet
install_containerd
install_crictl
install_kubelet
echo ${shellQuote(kubeletConfigB64)} | base64 -d > /var/lib/kubelet/config.yaml
systemctl daemon-reload
systemctl restart containerd
systemctl start kubelet
echo "upgraded: kubelet $(/usr/local/bin/kubelet --version | awk '{print $2}'), containerd \${CONTAINERD_VERSION}"
`;
}

/** The command a node runs (as root) once the install script has run; carries the pool's bootstrap token. */
export function joinCommand(inputs: NodeJoinInputs, token: string): string {
  return `sudo ${JOIN_HELPER} --api-url ${shellQuote(inputs.registrationUrl)} --node-pool ${shellQuote(inputs.nodePoolIdentity)} --token ${shellQuote(token)}`;
}

/** cloud-init user data: writes the install script, runs it, then runs the join command. */
export function cloudInitUserData(inputs: NodeJoinInputs, token: string): string {
  const installPath = `${INSTALL_DIR}/install.sh`;
  return (
    '#cloud-config\n' +
    stringify(
      {
        package_update: true,
        packages: ['curl', 'ca-certificates', 'iproute2', 'tar'],
        write_files: [
          { path: installPath, permissions: '0700', owner: 'root:root', encoding: 'b64', content: Buffer.from(installScript(inputs), 'utf8').toString('base64') },
        ],
        runcmd: [
          ['bash', installPath],
          [JOIN_HELPER, '--api-url', inputs.registrationUrl, '--node-pool', inputs.nodePoolIdentity, '--token', token],
        ],
      },
      { lineWidth: 0 },
    )
  );
}
