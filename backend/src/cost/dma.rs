//! The machine cost of one DMA transfer as the Penguin passes and the emitter both see it: which
//! operand is a load's or a store's on-chip tile ([`dma_tile`]), the tile's bytes
//! ([`tile_bytes`]), the bytes the transfer moves on its queues ([`transfer_bytes`]: in the HBM
//! side's type, as the simulator counts them), the splits a transfer may take
//! ([`split_choices`]), and how many pieces a lone transfer is split into for its latency
//! ([`dma_pieces`]; the emitter's actual split balances whole loop bodies,
//! `codegen::queues::compute_queue_plan`).

use penguin::ir::{Memory, Op, Operand};
use penguin::Function;
use runtime_sim::machine::{self, DMA_QUEUES};

/// The on-chip tile of a load or gather (which writes it) or a store or scatter (which reads it);
/// `None` for any other operation.
pub fn dma_tile<'a>(op: &Op, dst: &'a Operand, srcs: &'a [Operand]) -> Option<&'a Operand> {
    match op {
        Op::Load | Op::Gather { .. } => Some(dst),
        Op::Store | Op::Scatter { .. } => srcs.first(),
        _ => None,
    }
}

/// The bytes a transfer of `tile` moves: its elements times their size.
pub fn tile_bytes(func: &Function, tile: &Operand) -> u64 {
    tile.access.value_shape().iter().product::<u64>() * func.tensors[tile.tensor].dtype.size_bytes()
}

/// The bytes a load or store moves on its queues, as the simulator counts them: its tile's
/// elements in the type of its HBM side (the destination when that is in HBM, else the source),
/// so a store that narrows an f32 tile to bf16 moves the bf16 bytes; `None` for any other
/// operation.
pub fn transfer_bytes(func: &Function, op: &Op, dst: &Operand, srcs: &[Operand]) -> Option<u64> {
    let tile = dma_tile(op, dst, srcs)?;
    let side = match func.tensors[dst.tensor].memory {
        Memory::Hbm => dst,
        _ => srcs.first().unwrap_or(tile),
    };
    let elems: u64 = tile.access.value_shape().iter().product();
    Some(elems * func.tensors[side.tensor].dtype.size_bytes())
}

/// The numbers of pieces a transfer of `partitions` partitions may be split into, ascending:
/// every divisor of `partitions` (so that every piece moves the same partitions) up to the
/// largest power of two that divides it, at most the [`DMA_QUEUES`] queues. A 96-partition tile
/// splits 3, 6 or 12 ways as well as 2, 4, 8 or 16; a 72-partition one 3 or 6 ways but not 12,
/// so that no piece is shorter than the power-of-two split's: the bounds' least piece
/// ([`crate::cost::dep_bound::piece_latency`]) is the same with or without the other divisors.
/// The queue plan's choices (`codegen::queues`).
pub fn split_choices(partitions: u64) -> Vec<u64> {
    let partitions = partitions.max(1);
    let mut most = 1;
    while most * 2 <= DMA_QUEUES as u64 && partitions.is_multiple_of(most * 2) {
        most *= 2;
    }
    (1..=most)
        .filter(|&p| partitions.is_multiple_of(p))
        .collect()
}

/// How many pieces a lone transfer of `np` partitions and `bytes` would be split into for its
/// latency: a power of two that divides `np`, at most the 16 queues, and no more than keeps each
/// piece's queue time at least twice the `sp` issue cost. The emergent heuristic estimates a
/// tile's DMA time with it; the emitter's actual split balances whole loop bodies
/// ([`crate::codegen::queues::compute_queue_plan`]).
pub fn dma_pieces(np: u64, bytes: u64) -> u64 {
    let want = machine::dma_queue_cycles(bytes) / (2 * machine::dma_issue_cycles());
    let mut k = 1;
    while k * 2 <= DMA_QUEUES as u64 && k * 2 <= want && np.is_multiple_of(k * 2) {
        k *= 2;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    const COPIES: &str = r#"kernel copies(x) -> (y, z) {
  tensor x: hbm bf16[64, 256] input
  tensor y: hbm bf16[64, 256] output
  tensor z: hbm f32[64, 256] output
  tensor t: sbuf f32[64, 256] local
  stmt {
    t[0 +: 64, 0 +: 256] = load.dma x[0 +: 64, 0 +: 256]
  }
  stmt {
    y[0 +: 64, 0 +: 256] = store.dma t[0 +: 64, 0 +: 256]
  }
  stmt {
    z[0 +: 64, 0 +: 256] = store.dma t[0 +: 64, 0 +: 256]
  }
}
"#;

    #[test]
    fn a_transfer_splits_into_divisors_of_its_partitions_up_to_its_power_of_two_split() {
        assert_eq!(split_choices(128), vec![1, 2, 4, 8, 16]);
        assert_eq!(split_choices(96), vec![1, 2, 3, 4, 6, 8, 12, 16]);
        assert_eq!(split_choices(80), vec![1, 2, 4, 5, 8, 10, 16]);
        assert_eq!(split_choices(72), vec![1, 2, 3, 4, 6, 8]);
        assert_eq!(split_choices(40), vec![1, 2, 4, 5, 8]);
        assert_eq!(split_choices(7), vec![1]);
        assert_eq!(split_choices(0), vec![1]);
    }

    #[test]
    fn a_transfer_moves_its_hbm_sides_bytes() {
        let func = penguin::parse_function(COPIES).expect("the test kernel parses");
        let moved: Vec<(u64, u64)> = (func.insts.values())
            .filter_map(|d| {
                let tile = dma_tile(&d.op, &d.dst, &d.srcs)?;
                Some((
                    tile_bytes(&func, tile),
                    transfer_bytes(&func, &d.op, &d.dst, &d.srcs)?,
                ))
            })
            .collect();
        // The widening load and the narrowing store move bf16; the f32 store moves f32. The
        // tile is f32 in all three.
        let elems = 64 * 256;
        assert_eq!(
            moved,
            vec![
                (elems * 4, elems * 2),
                (elems * 4, elems * 2),
                (elems * 4, elems * 4)
            ]
        );
    }
}
