#!/usr/bin/env bash
# fetch_sdist.sh NAME VERSION: prints the path of NAME-VERSION's PyPI sdist, downloaded once into
# $OPFORGE_SDIST_DIR (default ~/.cache/opforge/sdist). pip's own `download --no-binary` would run
# the project's setup.py to read its metadata (which imports torch); the file is taken from the
# index's simple page instead, and checked against the sha256 the page gives.
set -euo pipefail
name=$1 version=$2
dir=${OPFORGE_SDIST_DIR:-$HOME/.cache/opforge/sdist}
mkdir -p "$dir"
python3 - "$name" "$version" "$dir" <<'PY'
import hashlib, os, re, sys, tempfile, urllib.request
name, version, folder = sys.argv[1:4]
index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
norm = re.sub(r"[-_.]+", "-", name).lower()
file = re.sub(r"[-_.]+", "_", name).lower() + "-" + version + ".tar.gz"
path = os.path.join(folder, file)
if not os.path.exists(path):
    page = urllib.request.urlopen(index + "/" + norm + "/", timeout=60).read().decode()
    links = re.findall(r'href="([^"]*/' + re.escape(file) + r')#sha256=([0-9a-f]{64})"', page)
    if not links:
        sys.exit("%s: no %s on %s" % (name, file, index))
    url, digest = links[0]
    if url.startswith("/"):
        url = index.split("/simple")[0] + url
    data = urllib.request.urlopen(url, timeout=300).read()
    if hashlib.sha256(data).hexdigest() != digest:
        sys.exit("%s: sha256 mismatch" % url)
    fd, tmp = tempfile.mkstemp(dir=folder)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
print(path)
PY
