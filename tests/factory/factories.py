# Kernels made by factories, as host code builds them: the run names the factory's call with
# `--kernel EXPR` (tests/factory_kernels.rs).
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

_made = {}


def make_masked_scale(rows, scale):
    """Returns (kernel, tiles): the kernel scales the lower triangle of each 128-row block."""
    tiles = rows // 128
    lower = np.tril(np.ones((128, 128), dtype=np.float32))
    upper = np.triu(np.ones((128, 128), dtype=np.float32), k=1)

    @nki.jit
    def masked_scale(x):
        out = nl.ndarray((rows, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        low = nl.shared_constant(lower, dtype=nl.float32)
        high = nl.shared_constant(upper, dtype=nl.float32)
        for t in nl.affine_range(tiles):
            xt = nl.load(x[t * 128:(t + 1) * 128, :])
            kept = nl.multiply(xt, nl.load(low))
            rest = nl.multiply(xt, nl.load(high))
            nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(nl.multiply(kept, scale), rest))
        return out

    return masked_scale, tiles


def get_block_kernel(blocks, width):
    key = (blocks, width)
    if key not in _made:
        _made[key] = _build_block_kernel(blocks, width)
    return _made[key]


def _build_block_kernel(blocks, width):
    @nki.jit
    def _blocks(x):
        out = nl.ndarray((blocks * 128, width), dtype=nl.float32, buffer=nl.shared_hbm)
        b = nl.program_id(0)
        src = blocks - 1 - b
        xt = nl.load(x[src * 128:(src + 1) * 128, :])
        nl.store(out[b * 128:(b + 1) * 128, :], value=nl.multiply(xt, 2.0))
        return out

    def run_blocks(x):
        # The host's launch: one program per 128-row block.
        return _blocks[blocks](x)

    return run_blocks


def make_number(n):
    return n * 2
