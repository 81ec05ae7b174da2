"""Shim: see kubernetes/__init__.py. Only k8s service discovery would touch these."""


class _Rest:
    class ApiException(Exception):
        pass


rest = _Rest()


def CoreV1Api(*a, **k):  # noqa: N802 (the real name)
    raise RuntimeError("kubernetes shim: k8s service discovery is not available in this bench")
