#!/usr/bin/env python3
"""netns_ranks.py: MPI ranks over a real network stack on one machine.

    netns_ranks.py run --ranks N [--ranks-per-host K] [--rate 1gbit]
                       [--delay 2ms] -- EXE ARGS...

makes N/K network namespaces ("hosts") joined by veth pairs to a bridge of
their own (addresses 10.77.S.1 ..., the bridge 10.77.S.254, S from the
process id), runs `mpirun` with K consecutive ranks in each (one by
default; Open MPI's TCP transport only, on that subnet; mpirun starts each
host's daemon through this script as its launch agent, which enters the
namespace the address names), and
tears everything down again, whatever happens. `--rate` caps every link
with `tc tbf` in both directions; `--delay` adds latency with `tc netem`
where the kernel has it (sch_netem) and says that it skipped it where not.
Only the addresses of the namespaces this script made are ever used.
Prints what it shaped to stderr ("netns_ranks: ...") and exits with
mpirun's status. Needs root (CAP_NET_ADMIN), `ip`, `tc` and Open MPI.

    netns_ranks.py agent HOST COMMAND...

is the launch agent mpirun calls (plm_rsh_agent): COMMAND in the
namespace of address HOST (TFM_NETNS_HOSTS maps addresses to namespaces).
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

MPIRUN = ["mpirun", "--allow-run-as-root"]


def sh(*command, check=True):
    return subprocess.run(command, capture_output=True, text=True,
                          check=check)


def tc_rate_bytes(rate):
    """tc's rate spelling ("1gbit", "10gbit", "500mbit") in bytes/s."""
    units = {"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8}
    for unit, scale in units.items():
        if rate.endswith(unit):
            return float(rate[:-len(unit)]) * scale
    raise SystemExit(f"netns_ranks: --rate {rate}: expected kbit, mbit or "
                     "gbit, as tc spells them")


class Network:
    """N namespaces on a bridge; removed by close()."""

    def __init__(self, hosts):
        self.tag = os.getpid() % 100000
        self.subnet = f"10.77.{10 + os.getpid() % 240}"
        self.bridge = f"tfmbr{self.tag}"
        self.names = [f"tfmr{self.tag}-{i}" for i in range(hosts)]
        self.hosts = [f"{self.subnet}.{i + 1}" for i in range(hosts)]
        self.links = [f"tfv{self.tag}-{i}" for i in range(hosts)]
        self.made = []  # ("netns", name) or ("link", name), to undo
        self.scratch = None  # the daemons' TMPDIRs, one a namespace

    def open(self):
        # Every daemon is on host "vm" to Open MPI, and under one TMPDIR
        # they raced to make the same session directory: one each.
        self.scratch = tempfile.mkdtemp(prefix="netns-ranks-")
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        self.made.append(("link", self.bridge))
        sh("ip", "addr", "add", f"{self.subnet}.254/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for name, host, link in zip(self.names, self.hosts, self.links):
            sh("ip", "netns", "add", name)
            self.made.append(("netns", name))
            sh("ip", "link", "add", link, "type", "veth", "peer", "name",
               "eth0", "netns", name)
            self.made.append(("link", link))
            sh("ip", "link", "set", link, "master", self.bridge)
            sh("ip", "link", "set", link, "up")
            inside = ["ip", "netns", "exec", name]
            sh(*inside, "ip", "addr", "add", f"{host}/24", "dev", "eth0")
            sh(*inside, "ip", "link", "set", "eth0", "up")
            sh(*inside, "ip", "link", "set", "lo", "up")

    def agent_hosts(self):
        """TFM_NETNS_HOSTS, which the agent reads: address=namespace=TMPDIR
        for each rank."""
        return ",".join(f"{h}={n}={os.path.join(self.scratch, n)}"
                        for h, n in zip(self.hosts, self.names))

    def shape(self, rate, delay):
        """tbf at `rate` (and netem `delay`) on both ends of every link;
        what was done, as lines."""
        said = []
        netem = True
        for name, link in zip(self.names, self.links):
            for where in ([], ["ip", "netns", "exec", name]):
                device = link if not where else "eth0"
                parent = ["root"]
                if delay and netem:
                    added = sh(*where, "tc", "qdisc", "add", "dev", device,
                               "root", "handle", "1:", "netem", "delay",
                               delay, check=False)
                    if added.returncode == 0:
                        parent = ["parent", "1:1"]
                    else:
                        netem = False
                        said.append(f"netem: not in this kernel (sch_netem: "
                                    f"{added.stderr.strip()}); the {delay} "
                                    "of added latency is skipped")
                if rate:
                    # A burst of 10 ms at the rate, at least 64 KiB.
                    burst = max(int(tc_rate_bytes(rate) / 100), 65536)
                    sh(*where, "tc", "qdisc", "add", "dev", device, *parent,
                       "tbf", "rate", rate, "burst", str(burst), "latency",
                       "100ms")
        if rate:
            said.append(f"tbf: every link capped at {rate} each way")
        if delay and netem:
            said.append(f"netem: {delay} added each way on every link")
        return said

    def close(self):
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
        for kind, name in reversed(self.made):
            if kind == "netns":
                sh("ip", "netns", "del", name, check=False)
            else:
                sh("ip", "link", "del", name, check=False)
        self.made = []


def stop(signum, frame):
    raise SystemExit(128 + signum)  # so that the namespaces are removed


def run(args):
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    network = Network(args.ranks // args.ranks_per_host)
    try:
        network.open()
        for line in network.shape(args.rate, args.delay):
            print("netns_ranks: " + line, file=sys.stderr)
        env = dict(os.environ, TFM_NETNS_HOSTS=network.agent_hosts())
        agent = f"{sys.executable} {os.path.abspath(__file__)} agent"
        subnet = f"{network.subnet}.0/24"
        command = MPIRUN + [
            "-np", str(args.ranks), "--host",
            ",".join(f"{host}:{args.ranks_per_host}" for host in network.hosts),
            "--mca", "plm_rsh_agent", agent,
            # Daemons attached to the agent, so that one that fails says
            # why (a daemonized one left mpirun waiting).
            "--leave-session-attached",
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", subnet,
            "--mca", "oob_tcp_if_include", subnet]
        for name in args.export:
            command += ["-x", name]
        command += args.mpi_option
        return subprocess.run(command + args.command, env=env).returncode
    finally:
        network.close()


def agent(host, command):
    hosts = {entry.split("=")[0]: entry.split("=")[1:] for entry in
             os.environ.get("TFM_NETNS_HOSTS", "").split(",") if entry}
    if host not in hosts:
        sys.exit(f"netns_ranks agent: {host} is not one of this run's "
                 f"namespaces ({', '.join(hosts) or 'none'})")
    namespace, tmpdir = hosts[host]
    os.makedirs(tmpdir, exist_ok=True)
    os.environ["TMPDIR"] = tmpdir
    # nsenter enters the network namespace alone (`ip netns exec` would
    # also give the daemon a mount namespace, which it does not need).
    os.execvp("nsenter", ["nsenter", f"--net=/var/run/netns/{namespace}",
                          "/bin/sh", "-c", " ".join(command)])


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "agent":
        return agent(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--ranks", type=int, required=True)
    r.add_argument("--ranks-per-host", type=int, default=1,
                   help="consecutive ranks in each namespace (a pipeline "
                   "stage's tensor-parallel ranks on one host)")
    r.add_argument("--rate", help="tc tbf's rate on every link: 1gbit, ...")
    r.add_argument("--delay", help="tc netem's added latency: 2ms, ...")
    r.add_argument("-x", "--export", action="append", default=[],
                   help="an environment variable for the ranks (mpirun -x)")
    r.add_argument("--mpi-option", action="append", default=[],
                   help="an option for mpirun (--mpi-option=--mca ...)")
    r.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not 2 <= args.ranks <= 8 or not args.command:
        parser.error("expected --ranks 2 to 8 and a command after --")
    if args.ranks_per_host < 1 or args.ranks % args.ranks_per_host or \
            args.ranks == args.ranks_per_host:
        parser.error(f"--ranks-per-host {args.ranks_per_host} does not put "
                     f"--ranks {args.ranks} on 2 or more hosts evenly")
    if args.rate:
        tc_rate_bytes(args.rate)  # a rate tc spells, refused before any link
    sys.exit(run(args))


if __name__ == "__main__":
    main()
