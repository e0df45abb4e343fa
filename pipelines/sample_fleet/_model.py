"""The sample fleet's fixed shape (teams, nodes, clusters) and the records the simulators produce.

Everything here is plain data. Times are integer epoch seconds (UTC) throughout the generator; the
writers convert them to each source's own notation (naive local time for Slurm, RFC 3339 ``Z`` for
Kubernetes, epoch milliseconds for Prometheus).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = [
    "GPU_MODEL_NAMES",
    "K8S_CLUSTER",
    "K8S_TZ",
    "LEMON_HOST",
    "SLURM_CLUSTER",
    "SLURM_TZ",
    "TEAMS",
    "ClusterSpec",
    "GpuAllocation",
    "NodeEvent",
    "NodeSpec",
    "TeamSpec",
    "build_clusters",
    "gpu_uuid",
]

SLURM_CLUSTER = "slurm-a"
SLURM_TZ = "America/New_York"
K8S_CLUSTER = "k8s-b"
K8S_TZ = "UTC"
LEMON_HOST = "a100-013"

#: dcgm-exporter ``modelName`` per GPU type.
GPU_MODEL_NAMES: dict[str, str] = {
    "a100": "NVIDIA A100-SXM4-80GB",
    "h100": "NVIDIA H100 80GB HBM3",
}


@dataclass(frozen=True)
class TeamSpec:
    """One team of the allocation registry.

    Attributes:
        name: team name; also its Slurm account and Kubernetes namespace.
        share: entitlement share in the registry (all teams sum to 1.0).
        users: fictional user names (2-5).
        group: team group; selects the Kueue ClusterQueue (``cq-<group>``).
        slurm_weight: relative rate of Slurm job submissions.
        k8s_weight: relative rate of Kubernetes workload submissions.
        h100_frac: probability that a Slurm job of this team asks for the ``h100`` partition.
    """

    name: str
    share: float
    users: tuple[str, ...]
    group: str
    slurm_weight: float
    k8s_weight: float
    h100_frac: float


#: The twelve teams. ``nlp`` submits far more than its share (planted finding 4); ``recsys`` holds
#: GPUs it barely uses (planted finding 1).
TEAMS: tuple[TeamSpec, ...] = (
    TeamSpec("vision", 0.12, ("alice", "bob", "carol", "dave"), "research", 0.09, 0.08, 0.15),
    TeamSpec("nlp", 0.08, ("erin", "frank", "grace", "heidi", "ivan"), "research", 0.27, 0.30, 0.6),
    TeamSpec("speech", 0.08, ("judy", "kofi", "lena"), "research", 0.05, 0.06, 0.10),
    TeamSpec("rl", 0.06, ("mallory", "niaj"), "research", 0.05, 0.05, 0.10),
    TeamSpec("robotics", 0.07, ("olivia", "peggy", "quentin"), "research", 0.05, 0.05, 0.10),
    TeamSpec("infra", 0.05, ("rupert", "sybil"), "prod", 0.03, 0.10, 0.20),
    TeamSpec("safety", 0.06, ("trent", "victor"), "research", 0.04, 0.03, 0.10),
    TeamSpec(
        "multimodal", 0.12, ("walter", "wendy", "xavier", "yvonne"), "research", 0.12, 0.08, 0.45
    ),
    TeamSpec("recsys", 0.10, ("zoe", "arthur", "bianca"), "prod", 0.08, 0.12, 0.10),
    TeamSpec("genomics", 0.06, ("cedric", "delia"), "prod", 0.06, 0.06, 0.05),
    TeamSpec("climate", 0.08, ("emil", "fatima"), "prod", 0.06, 0.04, 0.05),
    TeamSpec("agents", 0.12, ("gustav", "hana", "igor"), "research", 0.10, 0.03, 0.45),
)


@dataclass(frozen=True)
class NodeSpec:
    """One GPU node.

    Attributes:
        host: host name.
        gpus: GPUs on the node.
        gpu_type: ``a100`` or ``h100``.
        partition: Slurm partition, or the Kueue ClusterQueue whose flavor selects this node.
        rack: rack name.
        cpus: CPUs on the node.
        index: position of the node in its cluster (stable ordering for every writer).
    """

    host: str
    gpus: int
    gpu_type: str
    partition: str
    rack: str
    cpus: int
    index: int


@dataclass(frozen=True)
class ClusterSpec:
    """One cluster: name, kind, time zone and nodes."""

    name: str
    kind: str
    tz: str
    nodes: tuple[NodeSpec, ...]

    @property
    def gpus(self) -> int:
        """Total GPUs in the cluster."""
        return sum(n.gpus for n in self.nodes)


def build_clusters() -> tuple[ClusterSpec, ClusterSpec]:
    """The two clusters of the sample fleet: ``slurm-a`` (192 GPUs) and ``k8s-b`` (64 GPUs)."""
    slurm_nodes: list[NodeSpec] = []
    for i in range(1, 17):
        rack = "r01" if i <= 8 else "r02"
        slurm_nodes.append(NodeSpec(f"a100-{i:03d}", 8, "a100", "gpu", rack, 128, len(slurm_nodes)))
    for i in range(1, 9):
        slurm_nodes.append(
            NodeSpec(f"h100-{i:03d}", 8, "h100", "h100", "r03", 192, len(slurm_nodes))
        )
    k8s_nodes: list[NodeSpec] = []
    for i in range(1, 9):
        cq = "cq-research" if i <= 5 else "cq-prod"
        rack = "r11" if i <= 4 else "r12"
        k8s_nodes.append(NodeSpec(f"gpu-node-{i:02d}", 8, "h100", cq, rack, 112, len(k8s_nodes)))
    return (
        ClusterSpec(SLURM_CLUSTER, "slurm", SLURM_TZ, tuple(slurm_nodes)),
        ClusterSpec(K8S_CLUSTER, "kubernetes", K8S_TZ, tuple(k8s_nodes)),
    )


def gpu_uuid(seed: int, cluster: str, host: str, index: int) -> str:
    """A deterministic, realistic-looking GPU UUID (``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``).

    Args:
        seed: the generator seed.
        cluster: cluster name.
        host: host name.
        index: GPU index on the host.

    Returns:
        The UUID string; stable for the same arguments.
    """
    digest = hashlib.sha256(f"{seed}/{cluster}/{host}/{index}".encode()).hexdigest()
    return f"GPU-{digest[0:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


@dataclass(frozen=True)
class GpuAllocation:
    """One GPU held by one job (or pod) over ``[start, end)``.

    Attributes:
        cluster: cluster name.
        host: host name.
        gpu: GPU index on the host.
        start: first second held (epoch s).
        end: first second free again (epoch s); for work still running at the window end, the
            window end.
        job_key: Slurm JobIDRaw, or ``namespace/pod`` for Kubernetes.
        team: owning team.
        activity: mean ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` while held.
        kind: ``busy``, ``idle`` (the idle team), ``low`` (a light job) or ``wait`` (a pod
            waiting for the rest of its gang).
        fb_mib: framebuffer in use while held (MiB).
        labels: the job labels dcgm-exporter adds (``hpc_job`` for Slurm; ``container``,
            ``namespace``, ``pod`` for Kubernetes).
    """

    cluster: str
    host: str
    gpu: int
    start: int
    end: int
    job_key: str
    team: str
    activity: float
    kind: str
    fb_mib: int
    labels: tuple[tuple[str, str], ...] = field(default=())


@dataclass(frozen=True)
class NodeEvent:
    """A node down/drain interval as ``sacctmgr show event`` lists it.

    Attributes:
        host: node name ("" for a cluster-wide event).
        start: interval start (epoch s).
        end: interval end (epoch s), or None while still open.
        state: node state (``DOWN``, ``DRAIN``), "" for cluster events.
        reason: reason text.
        user: who set it, as ``name(uid)``.
        xid: the XID seen on the node when the interval began (0 if none).
        xid_gpu: GPU index that raised the XID.
        xid_time: when the XID was raised (epoch s).
    """

    host: str
    start: int
    end: int | None
    state: str
    reason: str
    user: str
    xid: int = 0
    xid_gpu: int = -1
    xid_time: int = 0
