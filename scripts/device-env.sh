# Source this on the GPU machine (no pip install there, no network): makes `import ptxls.<room>`
# work from the working tree by linking the room folders under a ptxls/ namespace folder.
# Usage: source scripts/device-env.sh
_root=$(pwd)
_site=/tmp/ptxls-site
rm -rf "$_site" && mkdir -p "$_site/ptxls"
# every room pyproject.toml maps (ptxls.<room> = <folder>), so a new room needs no edit here
for room in $(python3 -c 'import tomllib; d = tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"]; print(*[k.split(".")[1] for k in d if k.count(".") == 1])'); do
  ln -s "$_root/$room" "$_site/ptxls/$room"
done
export PYTHONPATH="$_site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
unset _root _site room
