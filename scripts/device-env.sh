# The one preamble of every script that runs on the GPU host (bench/*.sh, through the device
# `run` tool). Source it from the repository root:  source scripts/device-env.sh
#
# - `import ptxls.<room>` works from the working tree (no pip install there, no network): the
#   room folders are linked under a ptxls/ namespace folder, every room pyproject.toml lists;
# - wheels carried in .whl/ (pygls, openai, pytest-lsp ... for the CLI, the server and the
#   tests; name .whl in the run's carry list) are unpacked into /tmp/site and put on the path;
# - $OUT (what the run tool brings back) exists: default /tmp/ptxls-out;
# - `machine_facts FILE` writes the date, GPU, driver, Python, numpy, ptxas and nvcc versions.
_root=$(pwd)
_site=/tmp/ptxls-site
rm -rf "$_site" && mkdir -p "$_site/ptxls"
for room in $(python3 -c 'import tomllib; d = tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["packages"]; print(*[k.split(".")[1] for k in d if k.count(".") == 1])'); do
  ln -s "$_root/$room" "$_site/ptxls/$room"
done
export PYTHONPATH="$_site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
export OUT=${OUT:-/tmp/ptxls-out}
mkdir -p "$OUT"
machine_facts() {
  {
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm --format=csv,noheader 2>&1
    python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)' 2>&1
    python3 -c 'import triton, torch; print("triton", triton.__version__, "torch", torch.__version__)' 2>/dev/null
    ptxas --version 2>&1 | tail -1
    nvcc --version 2>&1 | tail -1
  } > "$1"
}
unset _root _site room
