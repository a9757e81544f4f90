"""Shared test settings: hypothesis profiles (``HYPOTHESIS_PROFILE=ci|dev|thorough``) and skip markers."""

import os
import shutil

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _has_gpu():
    try:
        from cuda.bindings import driver

        return driver.cuInit(0)[0] == driver.CUresult.CUDA_SUCCESS
    except Exception:
        return False


def _has_full_tensorrt():
    try:
        import tensorrt  # noqa: F401  (full TensorRT, not RTX)
    except Exception:
        return False
    return True


HAS_GPU = _has_gpu()
HAS_FULL_TENSORRT = _has_full_tensorrt()
HAS_GXX = shutil.which("g++") is not None

needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU (cuInit failed or cuda-python missing)")
needs_full_tensorrt = pytest.mark.skipif(not HAS_FULL_TENSORRT, reason="needs full TensorRT ('tensorrt'), not only TensorRT-RTX")
needs_gxx = pytest.mark.skipif(not HAS_GXX, reason="needs g++ to run the kernels on the CPU")
