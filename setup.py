"""Builds the optional C extension qkv.kernels._fused; all metadata lives in pyproject.toml.

optional=True: where it does not compile, the install still succeeds and the blocked kernel uses
its NumPy path (tests/test_fused.py asserts the extension is built in this project's environment).
No -march: the AVX2 code is chosen at run time (see _fused.c).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "qkv.kernels._fused",
            ["src/qkv/kernels/_fused.c"],
            depends=["src/qkv/kernels/_tile.h"],
            extra_compile_args=["-O3", "-fno-math-errno", "-Wall"],
            optional=True,
        ),
        Extension(   # the kernel's backward (kernels/autograd.py); optional like _fused
            "qkv.kernels._backward",
            ["src/qkv/kernels/_backward.c"],
            depends=["src/qkv/kernels/_exp.h"],
            extra_compile_args=["-O3", "-fno-math-errno", "-Wall"],
            optional=True,
        ),
    ]
)
