"""Only the optional C extension; the metadata is in pyproject.toml.

``dptrace.formats.trainlog._tqdm_fast`` speeds up reading tqdm bars in training logs. It is
optional: without a C compiler the build goes on without it and the pure-Python code runs.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "dptrace.formats.trainlog._tqdm_fast",
            ["dptrace/formats/trainlog/_tqdm_fast.c"],
            optional=True,
        ),
    ],
)
