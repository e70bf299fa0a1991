#!/usr/bin/env bash
# The VS Code end-to-end test: a real VS Code (code-server) in headless Chromium, driven
# by Playwright, with the packaged ptxls extension. It starts from an empty machine state (no
# ptxls setting, a python3 without ptxls) and goes through "Create a ptxls environment", which
# installs the wheel the .vsix carries into a fresh venv, to a working server.
#
# Installs what it needs on a Debian machine (run as root for the apt part), builds the
# .vsix, and runs tests/e2e/run.mjs. Idempotent: a second run only re-checks and tests.
# Why code-server is installed step by step (its installer fetches from GitHub): docs/editor-tests.md.
#
# Environment:
#   PTXLS_PYTHON      interpreter with ptxls installed, for the test's own LSP probe and to build
#                     the wheel (default: <repo>/.venv/bin/python)
#   PTXLS_E2E_TOOLS   where node/code-server are installed (default: ~/.cache/ptxls-e2e)
#   PTXLS_E2E_OUT     screenshots, logs, results.json (default: <repo>/.e2e/vscode)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${PTXLS_E2E_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ptxls-e2e}"
export PTXLS_PYTHON="${PTXLS_PYTHON:-$REPO/.venv/bin/python}"
export PTXLS_E2E_OUT="${PTXLS_E2E_OUT:-$REPO/.e2e/vscode}"
CODE_SERVER_VERSION=4.100.3   # the last code-server release that runs on Node 20
NODE_MAJOR=20

say() { printf '\n== %s\n' "$*"; }
die() { printf '\nvscode-e2e: FAILED: %s\n' "$*" >&2; exit 1; }
mkdir -p "$TOOLS" "$(dirname "$PTXLS_E2E_OUT")"

# --- Debian packages --------------------------------------------------------------
# chromium: the browser; ripgrep: code-server's search (its installer would fetch it from
# GitHub); the rest build code-server's native modules (argon2, kerberos, keytar, ...).
APT_PACKAGES=(chromium ripgrep build-essential pkg-config python3 python3-venv libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev ca-certificates)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "apt-get install ${missing[*]}"
  [[ $(id -u) == 0 ]] || die "missing Debian packages (${missing[*]}); run as root or install them"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Node 20 ----------------------------------------------------------------------
# code-server 4.100.3 needs Node 20. Use the system's if it is 20; otherwise get Node 20
# from npm (the `node` package ships the binary), bootstrapping npm from Debian if needed.
node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [[ $(node_major) != "$NODE_MAJOR" ]]; then
  if [[ $(node_major "$TOOLS/node$NODE_MAJOR/node_modules/node/bin/node") != "$NODE_MAJOR" ]]; then
    if ! command -v npm >/dev/null; then
      say "apt-get install nodejs npm (to bootstrap Node $NODE_MAJOR)"
      [[ $(id -u) == 0 ]] || die "no npm; run as root or install Node $NODE_MAJOR"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
    fi
    say "npm install node@$NODE_MAJOR"
    mkdir -p "$TOOLS/node$NODE_MAJOR"
    npm install --prefix "$TOOLS/node$NODE_MAJOR" --no-save --unsafe-perm "node@$NODE_MAJOR" >/dev/null
  fi
  export PATH="$TOOLS/node$NODE_MAJOR/node_modules/node/bin:$PATH"
  export npm_config_nodedir="$TOOLS/node$NODE_MAJOR/node_modules/node"
fi
[[ $(node_major) == "$NODE_MAJOR" ]] || die "Node $NODE_MAJOR is not on PATH (found $(node --version 2>&1))"
# Native modules are built against the local Node's headers; without nodedir, node-gyp would
# try to download them from nodejs.org.
if [[ -z ${npm_config_nodedir:-} ]]; then
  node_prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
  [[ -f $node_prefix/include/node/node_version.h ]] && export npm_config_nodedir="$node_prefix"
fi
echo "node $(node --version), npm $(npm --version)"

# --- code-server ------------------------------------------------------------------
CS="$TOOLS/code-server-$CODE_SERVER_VERSION"
CS_PKG="$CS/node_modules/code-server"
export CODE_SERVER="$CS_PKG/out/node/entry.js"
if [[ ! -f "$CS/.installed" ]]; then
  say "installing code-server $CODE_SERVER_VERSION into $CS (about a minute)"
  rm -rf "$CS" && mkdir -p "$CS"
  # Newer npm runs no dependency install scripts unless allowed; this pinned tree needs them.
  # (Older npm ignores the unknown setting.)
  export npm_config_dangerously_allow_all_scripts=true
  (
    set -x
    cd "$CS"
    echo '{"name":"ptxls-e2e-code-server","private":true}' > package.json
    # The postinstall downloads ripgrep from GitHub and fails; do its steps by hand.
    npm install --ignore-scripts --unsafe-perm --no-audit --no-fund "code-server@$CODE_SERVER_VERSION"
    npm rebuild --unsafe-perm argon2
    cd "$CS_PKG/lib/vscode"
    npm install --omit=dev --ignore-scripts --unsafe-perm --no-audit --no-fund
    mkdir -p node_modules/@vscode/ripgrep/bin
    cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
    npm_config_yes=true npm rebuild --unsafe-perm
    ln -sfn node_modules node_modules.asar
    ln -sfn code-linux.sh bin/remote-cli/code-server
    ln -sfn browser-linux.sh bin/helpers/browser.sh
    cd extensions
    npm install --omit=dev --unsafe-perm --no-audit --no-fund
  ) > "$TOOLS/code-server-install.log" 2>&1 || { tail -40 "$TOOLS/code-server-install.log"; die "code-server install (log: $TOOLS/code-server-install.log)"; }
  unset npm_config_dangerously_allow_all_scripts
  touch "$CS/.installed"
fi
node "$CODE_SERVER" --version >/dev/null || die "code-server does not start: node $CODE_SERVER --version"
echo "code-server $(node "$CODE_SERVER" --version | head -1)"

# --- npm trees for the extension and the test driver ----------------------------------
# `npm ci` again only when package-lock.json changed since the last install.
npm_ci_if_changed() {
  local dir="$1" stamp="$1/node_modules/.ptxls-lock-sha"
  local sha; sha="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [[ ! -f "$stamp" || $(cat "$stamp") != "$sha" ]]; then
    say "npm ci in ${dir#"$REPO"/}"
    # --ignore-scripts: nothing here needs them (esbuild finds its platform binary without its
    # postinstall), and keytar's (an optional dependency of vsce, for publishing) would try
    # GitHub and node-gyp.
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund) || die "npm ci in $dir"
    echo "$sha" > "$stamp"
  fi
}
npm_ci_if_changed "$REPO/vscode-client"
npm_ci_if_changed "$REPO/tests/e2e"

say "build and unit-test the extension, package the .vsix"
(cd "$REPO/vscode-client" && { npm test && PYTHON="$PTXLS_PYTHON" npm run package; } > "$PTXLS_E2E_OUT.build.log" 2>&1) || { tail -40 "$PTXLS_E2E_OUT.build.log"; die "extension build/test/package (log: $PTXLS_E2E_OUT.build.log)"; }
export PTXLS_VSIX="$REPO/vscode-client/ptxls.vsix"
ls -l "$PTXLS_VSIX"

# --- the server's Python ---------------------------------------------------------------
[[ -x "$PTXLS_PYTHON" ]] || die "PTXLS_PYTHON=$PTXLS_PYTHON is not an executable (create the venv: python3 -m venv .venv && .venv/bin/pip install -e '.[dev]')"
"$PTXLS_PYTHON" -c "import ptxls.server.app" || die "$PTXLS_PYTHON cannot import ptxls.server.app"

say "run the end-to-end test (output: $PTXLS_E2E_OUT)"
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
node "$REPO/tests/e2e/run.mjs"
say "the debugger in VS Code (output: ${PTXLS_E2E_DEBUG_OUT:-$REPO/.e2e/vscode-debugger})"
node "$REPO/tests/e2e/debugger.mjs"
