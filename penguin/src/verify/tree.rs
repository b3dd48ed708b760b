//! Checks of the tree: which statement holds each instruction and axis (exactly one), that every
//! statement appears once in the tree and no loop is nested in itself, and that predicates (and,
//! through [`Verifier::scope`], every affine expression) mention only enclosing loops' variables.
//! Walking the tree visits each instruction once, with its [`Ctx`], for [`Verifier::inst`].

use super::{AnyEntity, Ctx, Verifier};
use crate::affine::AffineExpr;
use crate::entities::{Axis, Inst, Stmt};
use crate::ir::StmtKind;
use crate::write::iv_name;
use cranelift_entity::SecondaryMap;

impl Verifier<'_> {
    /// Counts, over every statement of the function, which instructions and axes it holds.
    pub(super) fn ownership(&mut self) {
        let f = self.func;
        let mut inst_owners: SecondaryMap<Inst, Vec<Stmt>> = SecondaryMap::new();
        let mut axis_owners: SecondaryMap<Axis, Vec<Stmt>> = SecondaryMap::new();
        for (s, data) in f.stmts.iter() {
            match &data.kind {
                StmtKind::Insts(list) => {
                    for &i in list {
                        if f.insts.is_valid(i) {
                            inst_owners[i].push(s);
                        } else {
                            self.error(
                                AnyEntity::Stmt(s),
                                format!("holds undefined instruction {i}"),
                            );
                        }
                    }
                }
                StmtKind::Loop(a) => {
                    if f.axes.is_valid(*a) {
                        axis_owners[*a].push(s);
                    } else {
                        self.error(AnyEntity::Stmt(s), format!("loops over undefined axis {a}"));
                    }
                }
            }
        }
        for i in f.insts.keys() {
            match inst_owners[i].as_slice() {
                [] => self.error(AnyEntity::Inst(i), "is in no statement"),
                [_] => {}
                many => self.error(
                    AnyEntity::Inst(i),
                    format!("is in {} statements ({})", many.len(), join(many)),
                ),
            }
        }
        for a in f.axes.keys() {
            match axis_owners[a].as_slice() {
                [] => self.error(AnyEntity::Axis(a), "is the loop of no statement"),
                [_] => {}
                many => self.error(
                    AnyEntity::Axis(a),
                    format!("is the loop of {} statements ({})", many.len(), join(many)),
                ),
            }
        }
    }

    pub(super) fn tree(&mut self) {
        let f = self.func;
        let mut ctx = Ctx {
            loops: Vec::new(),
            guards: Vec::new(),
        };
        self.block(&f.body, None, &mut ctx);
        for s in f.stmts.keys() {
            if !self.stmt_seen[s] {
                self.error(AnyEntity::Stmt(s), "is not in the tree");
            }
        }
    }

    fn block(&mut self, block: &[Stmt], parent: Option<Axis>, ctx: &mut Ctx) {
        let f = self.func;
        for &s in block {
            if !f.stmts.is_valid(s) {
                let owner = match parent {
                    None => AnyEntity::Function,
                    Some(a) => AnyEntity::Axis(a),
                };
                self.error(owner, format!("body holds undefined statement {s}"));
                continue;
            }
            if self.stmt_seen[s] {
                self.error_in(
                    AnyEntity::Stmt(s),
                    &ctx.loops,
                    "appears more than once in the tree",
                );
                continue;
            }
            self.stmt_seen[s] = true;
            let data = &f.stmts[s];
            for (k, p) in data.preds.iter().enumerate() {
                self.scope(
                    AnyEntity::Stmt(s),
                    &ctx.loops,
                    &p.expr,
                    &format!("predicate {k}"),
                );
            }
            let saved = ctx.guards.len();
            ctx.guards.extend(data.preds.iter().cloned());
            match &data.kind {
                StmtKind::Insts(list) => {
                    for &i in list {
                        if f.insts.is_valid(i) && !self.inst_checked[i] {
                            self.inst_checked[i] = true;
                            self.inst(i, ctx);
                        }
                    }
                }
                StmtKind::Loop(a) => {
                    // A loop statement's axis is followed once: the first time it is met, and only
                    // while it is not already open (a cycle).
                    if let Some(ax) = f.axes.get(*a) {
                        if ctx.loops.contains(a) {
                            self.error_in(
                                AnyEntity::Stmt(s),
                                &ctx.loops,
                                format!("loop `{}` is nested in itself", ax.iv_name),
                            );
                        } else {
                            ctx.loops.push(*a);
                            self.block(&ax.body, Some(*a), ctx);
                            ctx.loops.pop();
                        }
                    }
                }
            }
            ctx.guards.truncate(saved);
        }
    }

    /// Reports the variables of `e` that are not induction variables of enclosing loops.
    pub(super) fn scope(
        &mut self,
        entity: AnyEntity,
        loops: &[Axis],
        e: &AffineExpr,
        what: &str,
    ) -> bool {
        let mut ok = true;
        for a in e.axes() {
            if !self.func.axes.is_valid(a) {
                self.error_in(entity, loops, format!("{what} uses undefined axis {a}"));
                ok = false;
            } else if !loops.contains(&a) {
                let name = iv_name(self.func, a);
                self.error_in(
                    entity,
                    loops,
                    format!("{what} uses `{name}` outside the loop over `{name}`"),
                );
                ok = false;
            }
        }
        ok
    }
}

fn join(stmts: &[Stmt]) -> String {
    crate::listing::capped_list(stmts, ", ")
}
