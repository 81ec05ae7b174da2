"""Shim: see kubernetes/__init__.py. Only k8s service discovery would touch these."""


def Watch(*a, **k):  # noqa: N802 (the real name)
    raise RuntimeError("kubernetes shim: k8s service discovery is not available in this bench")
