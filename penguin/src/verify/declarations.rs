//! Checks of the declarations: every tensor (name, rank, memory, PSUM limits, block
//! dimensions), the kernel's params and outputs, and every axis (induction-variable name, bounds,
//! and its loop annotations: `num_stages`, `multi_buffer`, pipelining).

use super::{is_identifier, mem_name, AnyEntity, Verifier};
use super::{MAX_PARTITIONS, PSUM_PARTITION_BYTES};
use crate::entities::{Axis, Tensor};
use crate::ir::{Memory, TensorKind};
use std::collections::HashMap;

impl Verifier<'_> {
    pub(super) fn tensors(&mut self) {
        let f = self.func;
        let mut names: HashMap<&str, Tensor> = HashMap::new();
        for (t, data) in f.tensors.iter() {
            let e = AnyEntity::Tensor(t);
            if !is_identifier(&data.name) {
                self.error(e, format!("name `{}` is not an identifier", data.name));
            }
            if let Some(first) = names.insert(&data.name, t) {
                self.error(e, format!("duplicate tensor name (also {first})"));
            }
            if data.shape.len() != 2 {
                self.error(
                    e,
                    format!(
                        "has {} dimensions; tensors are 2-D ([rows, columns] in HBM, [partitions, free] on chip)",
                        data.shape.len()
                    ),
                );
            }
            if let Some(d) = data.shape.iter().position(|&n| n == 0) {
                self.error(e, format!("dimension {d} is empty"));
            }
            if data.kind != TensorKind::Local && data.memory != Memory::Hbm {
                self.error(
                    e,
                    format!(
                        "is an {} tensor in {}; inputs and outputs live in HBM",
                        data.kind.name(),
                        mem_name(data.memory)
                    ),
                );
            }
            if data.kind == TensorKind::Const {
                match f.consts.get(&t) {
                    None => self.error(e, "is a constant tensor without values"),
                    Some(v) if v.len() as u64 != data.elems() => self.error(
                        e,
                        format!(
                            "is a constant of {} elements with {} values",
                            data.elems(),
                            v.len()
                        ),
                    ),
                    Some(_) => {}
                }
            }
            if data.memory != Memory::Hbm {
                if let Some(&p) = data.shape.first() {
                    if p > MAX_PARTITIONS {
                        self.error(
                            e,
                            format!(
                                "has {p} partitions; {} holds at most {MAX_PARTITIONS}",
                                mem_name(data.memory)
                            ),
                        );
                    }
                }
            }
            if data.memory == Memory::Psum {
                if data.dtype != crate::ir::DType::F32 {
                    self.error(
                        e,
                        format!("is a PSUM tensor of {}; PSUM holds f32", data.dtype.name()),
                    );
                }
                let free = data
                    .shape
                    .iter()
                    .skip(1)
                    .fold(1u128, |acc, &n| acc.saturating_mul(u128::from(n)));
                let bytes = free.saturating_mul(u128::from(data.dtype.size_bytes()));
                if bytes > u128::from(PSUM_PARTITION_BYTES) {
                    self.error(
                        e,
                        format!(
                            "a PSUM tensor takes {bytes} bytes per partition; the PSUM holds {PSUM_PARTITION_BYTES}"
                        ),
                    );
                }
            }
            for (k, b) in data.block.iter().enumerate() {
                if !f.axes.is_valid(b.axis) {
                    self.error(
                        e,
                        format!("block dimension {k} names undefined axis {}", b.axis),
                    );
                }
                if b.count == 0 {
                    self.error(e, format!("block dimension {k} has count 0"));
                }
            }
        }
    }

    pub(super) fn params(&mut self) {
        let f = self.func;
        let fe = AnyEntity::Function;
        for (list, kind, what, missing) in [
            (
                &f.params,
                TensorKind::Input,
                "parameter",
                "is an input tensor but not a parameter of the kernel",
            ),
            (
                &f.outputs,
                TensorKind::Output,
                "output",
                "is an output tensor but not among the kernel's outputs",
            ),
        ] {
            let mut seen: Vec<Tensor> = Vec::new();
            for &t in list {
                let Some(data) = f.tensors.get(t) else {
                    self.error(fe, format!("{what} {t} is not a defined tensor"));
                    continue;
                };
                if seen.contains(&t) {
                    self.error(fe, format!("{what} `{}` is listed twice", data.name));
                }
                seen.push(t);
                if data.kind != kind || data.memory != Memory::Hbm {
                    self.error(
                        fe,
                        format!(
                            "{what} `{}` is a{} {} {} tensor, not an {} HBM tensor",
                            data.name,
                            if data.kind == TensorKind::Local {
                                ""
                            } else {
                                "n"
                            },
                            data.kind.name(),
                            mem_name(data.memory),
                            kind.name()
                        ),
                    );
                }
            }
            for (t, data) in f.tensors.iter() {
                if data.kind == kind && !list.contains(&t) {
                    self.error(AnyEntity::Tensor(t), missing);
                }
            }
        }
        for &t in f.consts.keys() {
            if f.tensors.get(t).is_none_or(|d| d.kind != TensorKind::Const) {
                self.error(
                    fe,
                    format!("values are given for {t}, which is not a const tensor"),
                );
            }
        }
        if !is_identifier(&f.name) {
            self.error(fe, "the kernel name is not an identifier");
        }
    }

    pub(super) fn axes(&mut self) {
        let f = self.func;
        let mut names: HashMap<&str, Axis> = HashMap::new();
        for (a, data) in f.axes.iter() {
            let e = AnyEntity::Axis(a);
            if !is_identifier(&data.iv_name) {
                self.error(
                    e,
                    format!("induction variable `{}` is not an identifier", data.iv_name),
                );
            }
            if let Some(first) = names.insert(&data.iv_name, a) {
                self.error(
                    e,
                    format!("duplicate induction variable name (also {first})"),
                );
            }
            if data.lb > data.ub {
                self.error(
                    e,
                    format!("lower bound {} is above upper bound {}", data.lb, data.ub),
                );
            }
            let at = &data.attrs;
            if at.num_stages == Some(0) {
                self.error(e, "num_stages is 0; it must be at least 1");
            }
            if at.multi_buffer == Some(0) {
                self.error(e, "multi_buffer is 0; it must be at least 1");
            }
            if let Some(p) = at.pipelined {
                if p.num_stages == 0 {
                    self.error(e, "is pipelined with 0 stages");
                } else if p.orig_trip < 0 {
                    self.error(
                        e,
                        format!("is pipelined from a negative trip count {}", p.orig_trip),
                    );
                } else {
                    let want = p.loop_trip();
                    let have = i128::from(data.ub) - i128::from(data.lb);
                    if want != have {
                        let what = if p.peeled { "a steady state of " } else { "" };
                        self.error(
                            e,
                            format!(
                                "is pipelined from {} iterations in {} stages, so it runs {what}{want} iterations, but its bounds {}..{} give {have}",
                                p.orig_trip, p.num_stages, data.lb, data.ub
                            ),
                        );
                    }
                }
            }
        }
    }
}
