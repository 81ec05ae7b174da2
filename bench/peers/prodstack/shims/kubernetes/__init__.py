"""Import shim for `kubernetes` (not in this machine's wheel index).

production-stack's src/vllm_router/service_discovery.py does `from kubernetes import client,
config, watch` at module level, so the router cannot even start without the name. The package
is only *used* inside K8sPodIPServiceDiscovery and K8sServiceNameServiceDiscovery (their
__init__ calls config.load_incluster_config(), client.CoreV1Api(), watch.Watch()), i.e. only
with `--service-discovery k8s`. The bench runs `--service-discovery static`, which never
constructs those classes, so none of these names is ever called. Anything that did call them
fails loudly here instead of pretending to be a cluster.
"""
from . import client, config, watch  # noqa: F401
