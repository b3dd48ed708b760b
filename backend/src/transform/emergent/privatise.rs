//! One copy of a tile per loop that uses it in turn.
//!
//! A tile that several sibling loops use, one after another, each of them starting by writing
//! all of it, carries no value from one loop to the next. The ring planning ([`super::plan`])
//! rings a tile along the innermost loop enclosing all its accesses, so such a tile would be
//! ringed along the loop around the siblings, or not at all: the iterations of that loop do not
//! start by writing it. This happens to every tile of a loop the annotated pipeliner peeled
//! (`--peel`): the prologue and the epilogue hold copies of the loops of its body, all on the same
//! tiles (matmul's `k.n0` and `k` on `lhs` and `rhs`). [`privatise_tiles`] gives each such loop
//! after the first its own copy of the tile, so that each loop's tile is planned (and ringed) in
//! that loop alone, as if the loops had been written with different tiles.
//!
//! What qualifies: a local, unblocked SBUF or PSUM tensor whose accesses all lie in loops directly
//! below the innermost loop enclosing them all (or below the top level), in at least two distinct
//! such loops (the **groups**, in program order), where every group's first access (in program
//! order) is an unguarded statement, at any depth inside the group's loop with every loop on the
//! way unguarded and running at least once, that writes the whole tile without reading it. Then
//! every value a group reads was written in the same group, in the same execution of its loop:
//! renaming the tile per group keeps every value. SBUF (or PSUM) must hold the copies.
//!
//! Invariants: a renamed tile is a clone of the original (shape, dtype, memory, spans) under a
//! fresh name; the accesses of one group all name the same tile; nothing else changes.

use super::plan::{collect_uses, common_loops, Use};
use super::remark::EmergentRemark;
use crate::cost::budget;
use penguin::edit;
use penguin::ir::{Memory, StmtKind, TensorKind};
use penguin::{Axis, Function, Stmt, Tensor};

/// Gives every loop after the first that uses a tile in turn its own copy of the tile (see the
/// module doc); logs each tile it splits.
pub fn privatise_tiles(func: &mut Function, log: &mut Vec<EmergentRemark>) {
    let parents = loop_stmts(func);
    for (t, us) in collect_uses(func) {
        let Some(groups) = groups(func, t, &us, &parents) else {
            continue;
        };
        let td = func.tensors[t].clone();
        let copies = groups.len() as u64 - 1;
        let fits = match td.memory {
            Memory::Sbuf => {
                budget::sbuf_fits(budget::sbuf_in_use(func) + copies * budget::tensor_bytes(&td))
            }
            Memory::Psum => budget::psum_fits(
                budget::psum_banks_in_use(func) + copies * budget::psum_slot_banks(&td),
            ),
            _ => false,
        };
        let loops: Vec<String> = groups
            .iter()
            .map(|(l, _)| func.display_iv(*l).to_string())
            .collect();
        if !fits {
            log.push(EmergentRemark::SharedTile {
                tile: td.name.clone(),
                loops,
            });
            continue;
        }
        let mut names = vec![td.name.clone()];
        for (_, group) in &groups[1..] {
            let copy = edit::copy_tensor(func, t, &names.len().to_string());
            names.push(func.tensors[copy].name.clone());
            for u in group {
                let d = &mut func.insts[u.inst];
                for o in std::iter::once(&mut d.dst).chain(d.srcs.iter_mut()) {
                    if o.tensor == t {
                        o.tensor = copy;
                    }
                }
            }
        }
        log.push(EmergentRemark::Privatised {
            tile: td.name.clone(),
            loops,
            copies: names,
        });
    }
}

/// The statement of every loop.
fn loop_stmts(func: &Function) -> std::collections::HashMap<Axis, Stmt> {
    let mut out = std::collections::HashMap::new();
    func.walk_stmts(|s, _| {
        if let StmtKind::Loop(a) = func.stmts[s].kind {
            out.insert(a, s);
        }
    });
    out
}

/// The groups of tile `t`'s accesses `us` (program order), each with its loop, when the tile
/// qualifies (see the module doc).
fn groups<'u>(
    func: &Function,
    t: Tensor,
    us: &'u [Use],
    parents: &std::collections::HashMap<Axis, Stmt>,
) -> Option<Vec<(Axis, Vec<&'u Use>)>> {
    let td = &func.tensors[t];
    if td.kind != TensorKind::Local
        || !td.block.is_empty()
        || !matches!(td.memory, Memory::Sbuf | Memory::Psum)
    {
        return None;
    }
    let depth = common_loops(us).len();
    let mut groups: Vec<(Axis, Vec<&Use>)> = Vec::new();
    for u in us {
        let &l = u.loops.get(depth)?;
        match groups.iter_mut().find(|(g, _)| *g == l) {
            Some((_, g)) => g.push(u),
            None => groups.push((l, vec![u])),
        }
    }
    if groups.len() < 2 {
        return None;
    }
    let kills = |u: &Use| {
        let d = &func.insts[u.inst];
        let on_the_way = u.loops[depth..].iter().all(|&a| {
            func.axes[a].trip_count() >= 1
                && parents
                    .get(&a)
                    .is_some_and(|&s| func.stmts[s].preds.is_empty())
        });
        u.writes
            && !u.reads
            && d.dst.tensor == t
            && d.writes_whole(&td.shape)
            && func.stmts[u.stmt].preds.is_empty()
            && on_the_way
    };
    groups.iter().all(|(_, g)| kills(g[0])).then_some(groups)
}
