"""``ptxls/kernels``: the kernels of an open document, as the VS Code client's "… for this
kernel" commands ask for them (the client no longer scans the text itself). The cases are the
ones the client's own scanner was tested with (vscode-client/test/kernels.test.ts before)."""

from __future__ import annotations

import asyncio

import pytest

from lsp_helpers import SHARED_SERVER, open_doc

pytestmark = SHARED_SERVER


@pytest.fixture
def client(shared_client):
    """One server for the module: the tests only ask (each on documents of its own)."""
    return shared_client


PTX = "\n".join(
    [
        ".version 8.5",
        ".target sm_90",
        ".visible .entry first(",
        "\t.param .u64 p",
        ")",
        "{ ret; }",
        ".entry second()",
        "{ ret; }",
        ".func helper() { ret; }",
    ]
)

CUDA = "\n".join(
    [
        "#include <cuda_runtime.h>",
        "__device__ float twice(float x) { return 2 * x; }",
        'extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {',
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;",
        "}",
        "__global__ void __launch_bounds__(256, 2)",
        "scale(float* x) {}",
        "template <int N> __global__ void tiled(float* x) {}",
        "int main() { vec_add<<<1, 1>>>(0, 0, 0, 0); }",
    ]
)

TRITON = "\n".join(
    [
        "import triton",
        "from triton import jit",
        "@triton.jit",
        "def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):",
        "    pass",
        "def helper():",
        "    pass",
        "@jit(do_not_specialize=['n'])",
        "@some.other_decorator",
        "def mul_kernel(x_ptr):",
        "    pass",
    ]
)


async def kernels(client, uri: str):
    return await asyncio.wait_for(
        client.protocol.send_request_async("ptxls/kernels", {"textDocument": {"uri": uri}}), 10
    )


def sites(answer) -> list[tuple[str, int, str]]:
    return [(k["name"], k["line"], k["kind"]) for k in answer]


async def test_ptx_every_entry_with_its_line_and_no_func(client, tmp_path):
    uri = (tmp_path / "k.ptx").as_uri()
    open_doc(client, uri, PTX)
    assert sites(await kernels(client, uri)) == [
        ("first", 2, "ptx-entry"),
        ("second", 6, "ptx-entry"),
    ]


async def test_cuda_globals_with_launch_bounds_templates_and_extern_c(client, tmp_path):
    uri = (tmp_path / "k.cu").as_uri()
    open_doc(client, uri, CUDA, language="cuda-cpp")
    assert sites(await kernels(client, uri)) == [
        ("vec_add", 2, "cuda-global"),
        ("scale", 6, "cuda-global"),  # the line of the name, after the __launch_bounds__ line
        ("tiled", 7, "cuda-global"),
    ]


async def test_triton_jit_functions_at_their_def_line(client, tmp_path):
    uri = (tmp_path / "k.py").as_uri()
    open_doc(client, uri, TRITON, language="python")
    assert sites(await kernels(client, uri)) == [
        ("add_kernel", 3, "triton-jit"),
        ("mul_kernel", 9, "triton-jit"),
    ]


async def test_other_languages_closed_documents_and_bad_params_have_none(client, tmp_path):
    uri = (tmp_path / "notes.txt").as_uri()
    open_doc(client, uri, "__global__ void k() {}", language="plaintext")
    assert await kernels(client, uri) == []
    assert await kernels(client, (tmp_path / "never-opened.ptx").as_uri()) == []
    for params in ({}, {"textDocument": None}, {"textDocument": {"uri": 7}}, [1, 2]):
        answer = await asyncio.wait_for(
            client.protocol.send_request_async("ptxls/kernels", params), 10
        )
        assert answer == []
