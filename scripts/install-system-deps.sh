#!/usr/bin/env bash
# Install the Debian 12 system packages that the integration tests need.
#
# Idempotent and non-interactive: runs `apt-get update` and `apt-get install` only when a package is
# missing, and never starts a service (the packages' maintainer scripts would start munge, mariadb and
# slurm daemons; the tests start their own, under a temp folder, see tests/integration/slurm/cluster.py).
# Called by `make test` and by CI on a fresh Debian 12 machine, as root (or with sudo available).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

# tests/integration/slurm: a real Slurm 22.05 with accounting (controller, node daemons, slurmdbd
# on MariaDB, munge auth); libfaketime aligns the test cluster's clock to an hour and forces
# slurmdbd's hourly rollup; libnss-wrapper gives the test cluster fictional users (alice, bob, …)
# without touching /etc/passwd.
PACKAGES=(
    slurm-wlm
    slurmdbd
    mariadb-server
    munge
    libfaketime
    libnss-wrapper
)

# tests/integration/prometheus: a real Prometheus (with promtool to backfill DCGM series).
PACKAGES+=(
    prometheus
)

# tests/dashboards: headless Chromium and its driver for the browser checks (never a test tool's
# own downloaded browser); tests/pipelines/test_privacy.py: pdftotext reads the weekly report's PDF.
PACKAGES+=(
    chromium
    chromium-driver
    poppler-utils
)

SUDO=()
if [[ ${EUID} -ne 0 ]]; then
    SUDO=(sudo --preserve-env=DEBIAN_FRONTEND)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "${pkg}" 2>/dev/null || true)
    if [[ ${status} != ii* ]]; then
        missing+=("${pkg}")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-system-deps: all ${#PACKAGES[@]} packages already installed"
    exit 0
fi

echo "install-system-deps: installing ${missing[*]}"

# Forbid service starts during the install: invoke-rc.d consults policy-rc.d (exit 101 = action
# forbidden). Only add ours when none exists, and remove only ours afterwards.
POLICY=/usr/sbin/policy-rc.d
policy_added=0
cleanup() {
    if [[ ${policy_added} -eq 1 ]]; then
        "${SUDO[@]}" rm -f "${POLICY}"
    fi
}
trap cleanup EXIT
if [[ ! -e ${POLICY} ]]; then
    printf '#!/bin/sh\n# added by goodput scripts/install-system-deps.sh for the duration of an install\nexit 101\n' \
        | "${SUDO[@]}" tee "${POLICY}" >/dev/null
    "${SUDO[@]}" chmod 0755 "${POLICY}"
    policy_added=1
fi

"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}"

echo "install-system-deps: done"
