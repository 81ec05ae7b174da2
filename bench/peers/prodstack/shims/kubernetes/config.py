"""Shim: see kubernetes/__init__.py. Only k8s service discovery would touch these."""


class ConfigException(Exception):
    pass


def load_incluster_config(*a, **k):
    raise RuntimeError("kubernetes shim: k8s service discovery is not available in this bench")


def load_kube_config(*a, **k):
    raise RuntimeError("kubernetes shim: k8s service discovery is not available in this bench")
