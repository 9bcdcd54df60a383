"""GPU tests skip with a reason where torch or CUDA is missing; FLASHGEN_REQUIRE_GPU=1 (the device run)
turns each such skip into a failure, so a GPU run cannot pass by skipping."""

import os

import pytest

REQUIRE_GPU = os.environ.get("FLASHGEN_REQUIRE_GPU") == "1"


def _gpu_missing():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    return None


def pytest_configure(config):
    if REQUIRE_GPU and _gpu_missing() is not None:
        raise pytest.UsageError(f"FLASHGEN_REQUIRE_GPU=1 but {_gpu_missing()}")


@pytest.fixture
def gpu():
    """The tests of this fixture run on a GPU (torch.device('cuda'))."""
    why = _gpu_missing()
    if why is not None:
        if REQUIRE_GPU:
            pytest.fail(f"FLASHGEN_REQUIRE_GPU=1 but {why}")
        pytest.skip(why)
    import torch
    return torch.device("cuda", torch.cuda.current_device())


@pytest.fixture
def torch_only():
    """torch without a GPU is enough (CPU tensors)."""
    try:
        import torch
    except ImportError:
        if REQUIRE_GPU:
            pytest.fail("FLASHGEN_REQUIRE_GPU=1 but torch is not installed")
        pytest.skip("torch is not installed")
    return torch
