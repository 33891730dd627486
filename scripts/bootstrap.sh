#!/bin/sh
# Fresh-machine set-up, idempotent: the Debian packages labtest's tests and real-lab
# features use, then a virtual environment (.venv) with labtest and its dev tools.
#   sh scripts/bootstrap.sh              # then: .venv/bin/labtest run
# LABTEST_VENV=DIR picks another venv folder. Without root (or sudo) the system
# packages are listed, not installed; the tests that need them skip naming them.
set -eu
cd "$(dirname "$0")/.."
venv=${LABTEST_VENV:-.venv}

# What each package is for:
#   snmpd snmp        a real net-snmp agent and client for the SNMP transport tests
#   tcpdump libpcap0.8 iproute2 nftables   Scapy traffic generation on veth in namespaces
#   openssh-server    a real sshd for the SSH transport tests (never started as a service)
#   lldpd frr ethtool real LLDP and routing software as peers (kernel lab, LLDP tests)
#   chromium          headless screenshots of the sign-off report
#   postgresql        a real PostgreSQL server for the shared-database tests (tests/db)
#   python3-venv      the virtual environment below (Debian splits it out of python3)
#   traceroute        the doctor's UDP path probes from the kernel lab's hosts (docs/doctor.md)
#   iperf3            the kernel lab's hosts carry the paths suite's member loads (UdpStreams)
packages="snmpd snmp tcpdump iproute2 libpcap0.8 openssh-server chromium nftables lldpd frr ethtool postgresql traceroute iperf3"
python3 -m venv --help >/dev/null 2>&1 && python3 -c "import ensurepip" 2>/dev/null \
    || packages="$packages python3-venv"

missing=""
for pkg in $packages; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        sudo=""
    elif command -v sudo >/dev/null; then
        sudo="sudo"
    else
        sudo="none"
    fi
    if [ "$sudo" = none ] || ! command -v apt-get >/dev/null; then
        echo "bootstrap: not installing system packages (need root and apt-get):$missing" >&2
        echo "bootstrap: tests that need them will skip, naming the package" >&2
    else
        echo "bootstrap: installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        $sudo apt-get update -qq
        # keep Debian from starting snmpd/sshd as system services while installing
        made_policy=0
        if [ ! -e /usr/sbin/policy-rc.d ]; then
            printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
            $sudo chmod +x /usr/sbin/policy-rc.d
            made_policy=1
        fi
        # shellcheck disable=SC2086
        $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
        if [ "$made_policy" = 1 ]; then $sudo rm -f /usr/sbin/policy-rc.d; fi
    fi
fi

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e '.[dev]'
echo "bootstrap: ready: $venv/bin/labtest run   (tests: $venv/bin/python -m pytest -q)"
