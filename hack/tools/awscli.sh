#!/usr/bin/env bash
# awscli.sh VERSION: makes bin/aws the AWS CLI of PyPI's `awscli` at VERSION (`make bench-backup`'s
# plain S3 client). Installed once per machine into a Python venv in a per-user cache keyed by
# version, so fresh clones (CI) link instead of installing again. Needs python3 with venv and pip.
set -euo pipefail
version=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/redis-operator/awscli-${version}
# A venv's scripts name its own path, so it is made in place; .complete marks a finished install.
if [[ ! -f ${cache}/.complete || ! -x ${cache}/bin/aws ]]; then
  echo ">> installing awscli ${version} from PyPI into ${cache} (once per machine)"
  rm -rf "${cache}"
  python3 -m venv "${cache}"
  "${cache}/bin/python" -m pip install --quiet --disable-pip-version-check "awscli==${version}"
  touch "${cache}/.complete"
fi
mkdir -p "${root}/bin"
ln -sf "${cache}/bin/aws" "${root}/bin/aws"
