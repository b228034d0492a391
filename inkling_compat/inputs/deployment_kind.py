"""What a parsed YAML document is when it is a deployment file (a Kubernetes object, a
docker-compose file, a SkyPilot task, Helm values) rather than an sglang server config: named for
`--launch` (inputs/deployment.py) and for a file given to `--config` (inputs/loading.py)."""

from __future__ import annotations

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

KUBERNETES, COMPOSE, SKYPILOT, DOCKERFILE, SCRIPT, WORDS = (
    "a Kubernetes manifest",
    "a docker-compose file",
    "a SkyPilot task",
    "a Dockerfile",
    "a shell script",
    "a list of words",
)


def foreign_kind(data: Any, *, helm: bool = True) -> str | None:
    """What a YAML mapping is when it is a deployment file rather than a server config, or None."""
    if not isinstance(data, dict):
        return None
    if kubernetes_object(data):
        return KUBERNETES
    services = data.get("services")
    if isinstance(services, dict) and services and all(isinstance(s, dict) for s in services.values()):
        if any(k in s for s in services.values() for k in ("image", "build", "command", "entrypoint", "environment")):
            return COMPOSE
    if isinstance(data.get("run"), str) and any(k in data for k in ("resources", "envs", "setup", "num_nodes", "workdir", "file_mounts", "service")):
        return SKYPILOT
    if helm and helm_values(data):
        return "a Helm values file"
    return None


def kubernetes_object(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("apiVersion"), str) and isinstance(data.get("kind"), str)


def helm_values(data: dict[str, Any]) -> bool:
    """A chart's values: an `image` with repository/tag (at the top or under `global`), or
    chart-level settings; a server config has neither."""
    image = data.get("image")
    if not isinstance(image, dict) and isinstance(data.get("global"), dict):
        image = data["global"].get("image")
    chart_keys = {"replicaCount", "imagePullSecrets", "nameOverride", "fullnameOverride", "serviceAccount", "podAnnotations", "nodeSelector", "tolerations", "affinity", "ingress"}
    return (isinstance(image, dict) and bool({"repository", "tag"} & set(image))) or len(chart_keys & set(data)) >= 2
