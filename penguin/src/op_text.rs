//! The text of an operation and its parameters, shared by both IR readers (Penguin's and the
//! backend's BIR): `NAME` or `NAME(key=value, ...)`, every key of the op's schema once, in any
//! order.
//!
//! [`op_schema`] is the one table of which operations exist in the text and which parameters each
//! takes; [`OpReader::op`] reads the parameter list after the name and builds the [`Op`].
//! Floats are bit-exact (`nan:0xBITS` keeps a NaN's payload).
//!
//! Invariants: reading never panics; every error is at the offending token and says what was
//! expected; an op is built only from a parameter list checked against its schema.

use crate::ir::{ActFunc, AluOp, Op, ReduceOp, Scale};
use crate::lex::{Tok, Token, TokenCursor};

/// The type of an op parameter's value.
#[derive(Clone, Copy)]
pub enum ParamTy {
    Bool,
    Float,
    /// A float or the word `tile`.
    Scale,
    Alu,
    Act,
    Reduce,
    /// A shuffle mask: `[m0, ..., m31]`, each 0..=31 or 255.
    Mask,
}

#[derive(Clone, Copy)]
pub enum ParamVal {
    Bool(bool),
    Float(f32),
    Scale(Scale),
    Alu(AluOp),
    Act(ActFunc),
    Reduce(ReduceOp),
    Mask([u8; 32]),
}

/// The parameters operation `name` takes, with their types; `None` for an unknown operation.
pub fn op_schema(name: &str) -> Option<&'static [(&'static str, ParamTy)]> {
    use ParamTy as T;
    Some(match name {
        "load" | "store" | "transpose" | "copy" | "bn_stats" | "bn_aggr" | "vector_transpose"
        | "max8" | "find_index8" | "sequence_bounds" => &[],
        "shuffle" => &[("mask", T::Mask)],
        "local_gather" => &[
            ("group", T::Float),
            ("elems", T::Float),
            ("count", T::Float),
        ],
        "match_replace8" => &[("imm", T::Float)],
        "rand" | "dropout" => &[("stream", T::Float)],
        "gather" => &[("skip_oob", T::Bool)],
        "scatter" => &[("skip_oob", T::Bool), ("accumulate", T::Bool)],
        "tensor_tensor_scan" => &[("op0", T::Alu), ("op1", T::Alu)],
        "matmul" => &[("accumulate", T::Bool)],
        "tensor_tensor" => &[("op", T::Alu)],
        "tensor_scalar" => &[("op", T::Alu), ("imm", T::Float), ("reverse", T::Bool)],
        "activation" => &[("func", T::Act), ("scale", T::Scale), ("bias", T::Bool)],
        "reduce" => &[("op", T::Reduce)],
        "memset" => &[("value", T::Float)],
        "iota" => &[("base", T::Float), ("pstep", T::Float), ("fstep", T::Float)],
        _ => return None,
    })
}

/// Reading an operation's parameters, for any reader over the shared tokens.
pub trait OpReader: TokenCursor + Sized {
    /// The operation `op_name` (its name token `op_tok` already taken) with its parameter list.
    fn op(&mut self, op_name: &str, op_tok: &Token) -> Result<Op, Self::Error> {
        let Some(schema) = op_schema(op_name) else {
            return self.err_at(op_tok, format!("unknown operation `{op_name}`"));
        };
        let vals = self.op_params(op_name, schema)?;
        Ok(build_op(op_name, &vals))
    }

    /// The parameter list of an op: every key of `schema`, once, in any order.
    fn op_params(
        &mut self,
        op: &str,
        schema: &[(&str, ParamTy)],
    ) -> Result<Vec<ParamVal>, Self::Error> {
        let mut vals: Vec<Option<ParamVal>> = vec![None; schema.len()];
        if self.is_sym("(") {
            let open = self.bump();
            let _ = self.list(")", |p| {
                let (key, tok) = p.ident("a parameter name")?;
                let Some(k) = schema.iter().position(|(n, _)| *n == key) else {
                    let names: Vec<&str> = schema.iter().map(|(n, _)| *n).collect();
                    let expected = if names.is_empty() {
                        "it takes none".to_string()
                    } else {
                        format!("expected {}", names.join(", "))
                    };
                    return p.err_at(
                        &tok,
                        format!("unknown parameter `{key}` of `{op}` ({expected})"),
                    );
                };
                if vals[k].is_some() {
                    return p.err_at(&tok, format!("duplicate parameter `{key}`"));
                }
                p.expect_sym("=")?;
                vals[k] = Some(p.param_value(schema[k].1)?);
                Ok(())
            })?;
            if let Some(k) = vals.iter().position(Option::is_none) {
                return self.err_at(
                    &open,
                    format!("missing parameter `{}` of `{op}`", schema[k].0),
                );
            }
        } else if let Some((name, _)) = schema.first() {
            return self.expected(&format!(
                "`(` and the parameters of `{op}` (missing `{name}`)"
            ));
        }
        // Every slot is filled: checked just above, or the schema is empty.
        Ok(vals.into_iter().flatten().collect())
    }

    fn param_value(&mut self, ty: ParamTy) -> Result<ParamVal, Self::Error> {
        match ty {
            ParamTy::Bool => {
                let (w, tok) = self.ident("`true` or `false`")?;
                match w.as_str() {
                    "true" => Ok(ParamVal::Bool(true)),
                    "false" => Ok(ParamVal::Bool(false)),
                    _ => self.err_at(&tok, format!("expected `true` or `false`, found `{w}`")),
                }
            }
            ParamTy::Float => Ok(ParamVal::Float(self.float()?)),
            ParamTy::Scale => {
                if self.is_word("tile") {
                    self.bump();
                    Ok(ParamVal::Scale(Scale::Tile))
                } else {
                    Ok(ParamVal::Scale(Scale::Imm(self.float()?)))
                }
            }
            ParamTy::Alu => {
                let (w, tok) = self.ident("an ALU operation")?;
                match AluOp::ALL.iter().find(|o| o.name() == w) {
                    Some(&o) => Ok(ParamVal::Alu(o)),
                    None => self.err_at(
                        &tok,
                        format!(
                            "unknown ALU operation `{w}` (expected one of {})",
                            names(AluOp::ALL.map(AluOp::name))
                        ),
                    ),
                }
            }
            ParamTy::Act => {
                let (w, tok) = self.ident("an activation function")?;
                match ActFunc::ALL.iter().find(|o| o.name() == w) {
                    Some(&o) => Ok(ParamVal::Act(o)),
                    None => self.err_at(&tok, format!("unknown activation function `{w}`")),
                }
            }
            ParamTy::Mask => {
                let open = self.peek().clone();
                self.expect_sym("[")?;
                let vals = self.list("]", |p| {
                    let (v, tok) = p.uint("a shuffle row (0 to 31, or 255)")?;
                    match u8::try_from(v) {
                        Ok(m)
                            if usize::from(m) < vocab::SHUFFLE_QUADRANT
                                || m == vocab::SHUFFLE_KEEP =>
                        {
                            Ok(m)
                        }
                        _ => p.err_at(&tok, format!("shuffle row {v} is not 0 to 31 or 255")),
                    }
                })?;
                match <[u8; 32]>::try_from(vals) {
                    Ok(m) => Ok(ParamVal::Mask(m)),
                    Err(v) => self.err_at(
                        &open,
                        format!("a shuffle mask has 32 rows, not {}", v.len()),
                    ),
                }
            }
            ParamTy::Reduce => {
                let (w, tok) = self.ident("a reduction")?;
                match ReduceOp::ALL.into_iter().find(|o| o.name() == w) {
                    Some(o) => Ok(ParamVal::Reduce(o)),
                    None => self.err_at(
                        &tok,
                        format!(
                            "unknown reduction `{w}` (expected one of {})",
                            names(ReduceOp::ALL.map(ReduceOp::name))
                        ),
                    ),
                }
            }
        }
    }

    /// `['-'] (NUMBER | inf | NaN | nan:0xBITS)` as an `f32`, bit-exact.
    fn float(&mut self) -> Result<f32, Self::Error> {
        let neg = self.eat_sym("-");
        let tok = self.peek().clone();
        let v = match &tok.tok {
            Tok::Int(s) | Tok::Float(s) if !s.starts_with("0x") && !s.starts_with("0X") => {
                self.bump();
                match s.parse::<f32>() {
                    Ok(v) => v,
                    Err(_) => return self.err_at(&tok, format!("malformed number `{s}`")),
                }
            }
            Tok::Ident(w) if w == "inf" => {
                self.bump();
                f32::INFINITY
            }
            Tok::Ident(w) if w == "NaN" => {
                self.bump();
                f32::NAN
            }
            Tok::Ident(w) if w == "nan" => {
                self.bump();
                self.expect_sym(":")?;
                let (bits, btok) = self.uint("the bits of a NaN (`nan:0x7fc00001`)")?;
                let v = u32::try_from(bits)
                    .map(f32::from_bits)
                    .ok()
                    .filter(|v| v.is_nan());
                match v {
                    Some(v) => v,
                    None => {
                        return self.err_at(&btok, format!("0x{bits:x} is not the bits of a NaN"))
                    }
                }
            }
            _ => return self.expected("a number"),
        };
        Ok(if neg { -v } else { v })
    }
}

impl<T: TokenCursor + Sized> OpReader for T {}

/// Builds the op from its checked parameter values (in schema order).
fn build_op(name: &str, vals: &[ParamVal]) -> Op {
    use ParamVal as V;
    match (name, vals) {
        ("matmul", [V::Bool(accumulate)]) => Op::Matmul {
            accumulate: *accumulate,
        },
        ("tensor_tensor", [V::Alu(op)]) => Op::TensorTensor { op: *op },
        ("tensor_scalar", [V::Alu(op), V::Float(imm), V::Bool(reverse)]) => Op::TensorScalar {
            op: *op,
            imm: *imm,
            reverse: *reverse,
        },
        ("activation", [V::Act(func), V::Scale(scale), V::Bool(bias)]) => Op::Activation {
            func: *func,
            scale: *scale,
            bias: *bias,
        },
        ("reduce", [V::Reduce(op)]) => Op::Reduce { op: *op },
        ("memset", [V::Float(value)]) => Op::Memset { value: *value },
        ("iota", [V::Float(base), V::Float(pstep), V::Float(fstep)]) => Op::Iota {
            base: *base,
            pstep: *pstep,
            fstep: *fstep,
        },
        ("gather", [V::Bool(skip_oob)]) => Op::Gather {
            skip_oob: *skip_oob,
        },
        ("scatter", [V::Bool(skip_oob), V::Bool(accumulate)]) => Op::Scatter {
            skip_oob: *skip_oob,
            accumulate: *accumulate,
        },
        ("load", []) => Op::Load,
        ("store", []) => Op::Store,
        ("transpose", []) => Op::Transpose,
        ("copy", []) => Op::Copy,
        ("bn_stats", []) => Op::BnStats,
        ("bn_aggr", []) => Op::BnAggr,
        ("vector_transpose", []) => Op::VectorTranspose,
        ("max8", []) => Op::Max8,
        ("sequence_bounds", []) => Op::SequenceBounds,
        ("shuffle", [V::Mask(mask)]) => Op::Shuffle { mask: *mask },
        // Counts, exact in float32 when the front end wrote them; a cast saturates, and the
        // verifier's shape rules catch a count that does not fit its operands.
        ("local_gather", [V::Float(group), V::Float(elems), V::Float(count)]) => Op::LocalGather {
            group: *group as u32,
            elems: *elems as u32,
            count: *count as u32,
        },
        ("find_index8", []) => Op::FindIndex8,
        ("match_replace8", [V::Float(imm)]) => Op::MatchReplace8 { imm: *imm },
        // Streams are small integers, exact in float32 (the front end numbers them from 0).
        ("rand", [V::Float(stream)]) => Op::Rand {
            stream: *stream as u32,
        },
        ("dropout", [V::Float(stream)]) => Op::Dropout {
            stream: *stream as u32,
        },
        ("tensor_tensor_scan", [V::Alu(op0), V::Alu(op1)]) => Op::TensorTensorScan {
            op0: *op0,
            op1: *op1,
        },
        _ => unreachable!("the parameters of `{name}` were checked against its schema"),
    }
}

/// Names for a diagnostic: `a, b, c`.
fn names<const N: usize>(all: [&str; N]) -> String {
    all.join(", ")
}
