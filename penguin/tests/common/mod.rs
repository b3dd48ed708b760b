//! A small builder of Penguin IR for the interpreter's tests and benchmark: one instruction per
//! statement, loops opened and closed like brackets, operands as tiles at affine starts.
#![allow(dead_code)]

use penguin::affine::{AffineExpr, CmpOp, Predicate};
use penguin::interp::Array;
use penguin::*;

pub struct Builder {
    pub f: Function,
    /// The loops currently open, innermost last.
    open: Vec<Axis>,
}

impl Builder {
    pub fn new(name: &str) -> Self {
        Builder {
            f: Function::new(name),
            open: Vec::new(),
        }
    }

    pub fn tensor(
        &mut self,
        name: &str,
        memory: Memory,
        dtype: DType,
        kind: TensorKind,
        rows: u64,
        cols: u64,
    ) -> Tensor {
        let t = self.f.tensors.push(TensorData {
            name: name.to_string(),
            memory,
            dtype,
            shape: vec![rows, cols],
            kind,
            block: Vec::new(),
        });
        match kind {
            TensorKind::Input => self.f.params.push(t),
            TensorKind::Output => self.f.outputs.push(t),
            TensorKind::Local => {}
            TensorKind::Const => {
                let n = (rows * cols) as usize;
                self.f.consts.insert(t, vec![0.0; n]);
            }
        }
        t
    }

    pub fn input(&mut self, name: &str, rows: u64, cols: u64) -> Tensor {
        self.tensor(name, Memory::Hbm, DType::F32, TensorKind::Input, rows, cols)
    }

    pub fn output(&mut self, name: &str, rows: u64, cols: u64) -> Tensor {
        self.tensor(
            name,
            Memory::Hbm,
            DType::F32,
            TensorKind::Output,
            rows,
            cols,
        )
    }

    pub fn sbuf(&mut self, name: &str, rows: u64, cols: u64) -> Tensor {
        self.tensor(
            name,
            Memory::Sbuf,
            DType::F32,
            TensorKind::Local,
            rows,
            cols,
        )
    }

    pub fn psum(&mut self, name: &str, rows: u64, cols: u64) -> Tensor {
        self.tensor(
            name,
            Memory::Psum,
            DType::F32,
            TensorKind::Local,
            rows,
            cols,
        )
    }

    /// Adds a block dimension of `count` slots along `axis`.
    pub fn widen(&mut self, t: Tensor, axis: Axis, count: u32) {
        self.f.tensors[t].block.push(BlockDim { axis, count });
    }

    fn place(&mut self, stmt: Stmt) {
        let parent = self.open.last().copied();
        self.f.block_mut(parent).push(stmt);
    }

    /// Opens a loop `for iv in lb..ub`; statements go into it until [`Builder::end_loop`].
    pub fn begin_loop(&mut self, iv: &str, lb: i64, ub: i64) -> (Stmt, Axis) {
        let axis = self.f.axes.push(AxisData {
            iv_name: iv.to_string(),
            kind: LoopKind::Affine,
            lb,
            ub,
            attrs: AxisAttrs::default(),
            body: Vec::new(),
        });
        let stmt = self.f.add_loop_stmt(axis);
        self.place(stmt);
        self.open.push(axis);
        (stmt, axis)
    }

    pub fn end_loop(&mut self) {
        self.open.pop().expect("end_loop without begin_loop");
    }

    /// One instruction in its own statement, on its op's default engine.
    pub fn inst(&mut self, op: Op, dst: Operand, srcs: Vec<Operand>) -> Stmt {
        let engine = op.default_engine();
        let inst = self.f.insts.push(InstData {
            op,
            engine,
            dst,
            srcs,
            mask: Vec::new(),
        });
        let stmt = self.f.add_inst_stmt(vec![inst]);
        self.place(stmt);
        stmt
    }

    /// Adds the guard `expr cmp bound` to a statement.
    pub fn guard(&mut self, stmt: Stmt, expr: AffineExpr, cmp: CmpOp, bound: i64) {
        self.f.stmts[stmt]
            .preds
            .push(Predicate { expr, cmp, bound });
    }

    /// The whole of an unblocked tensor.
    pub fn whole(&self, t: Tensor) -> Operand {
        Operand {
            tensor: t,
            access: Access::whole(&self.f.tensors[t].shape),
        }
    }
}

/// The constant `c`.
pub fn k(c: i64) -> AffineExpr {
    AffineExpr::constant(c)
}

/// `coeff · iv(axis) + c`.
pub fn lin(axis: Axis, coeff: i64, c: i64) -> AffineExpr {
    AffineExpr::from_terms([(axis, coeff)], c)
}

/// A `rows × cols` tile of an unblocked tensor starting at `(r, c)`.
pub fn tile(t: Tensor, r: AffineExpr, c: AffineExpr, rows: u64, cols: u64) -> Operand {
    Operand {
        tensor: t,
        access: Access {
            start: vec![r, c],
            size: vec![rows, cols],
            slots: Vec::new(),
            pattern: None,
        },
    }
}

/// `operand` with slot selectors for a blocked tensor.
pub fn slotted(mut operand: Operand, slots: Vec<AffineExpr>) -> Operand {
    operand.access.slots = slots;
    operand
}

/// Deterministic test data in `[-1, 1)`, independent of the interpreter's generator.
pub fn data(rows: usize, cols: usize, seed: u32) -> Array {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    Array::from_fn(rows, cols, |_, _| {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    })
}

/// The shape of `examples/matmul.nk`, generalised: `C[M, N] = AT[K, M]ᵀ · B[K, N]` with tiles
/// `tm × tk × tn` and `mt × nt × kt` of them: loops m, n, k; a memset of the PSUM tile before the
/// k loop, two loads and an accumulating matmul in it, then a copy to SBUF and a store.
pub struct MatmulShape {
    pub mt: u64,
    pub nt: u64,
    pub kt: u64,
    pub tm: u64,
    pub tn: u64,
    pub tk: u64,
}

pub fn matmul_ir(s: &MatmulShape) -> Function {
    let mut b = Builder::new("matmul");
    let at = b.input("at", s.kt * s.tk, s.mt * s.tm);
    let bb = b.input("b", s.kt * s.tk, s.nt * s.tn);
    let c = b.output("c", s.mt * s.tm, s.nt * s.tn);
    let acc = b.psum("acc", s.tm, s.tn);
    let lhs = b.sbuf("lhs", s.tk, s.tm);
    let rhs = b.sbuf("rhs", s.tk, s.tn);
    let res = b.sbuf("res", s.tm, s.tn);
    let (tm, tn, tk) = (s.tm as i64, s.tn as i64, s.tk as i64);
    let (_, m) = b.begin_loop("m", 0, s.mt as i64);
    let (_, n) = b.begin_loop("n", 0, s.nt as i64);
    b.inst(Op::Memset { value: 0.0 }, b.whole(acc), vec![]);
    let (_, kx) = b.begin_loop("k", 0, s.kt as i64);
    b.inst(
        Op::Load,
        b.whole(lhs),
        vec![tile(at, lin(kx, tk, 0), lin(m, tm, 0), s.tk, s.tm)],
    );
    b.inst(
        Op::Load,
        b.whole(rhs),
        vec![tile(bb, lin(kx, tk, 0), lin(n, tn, 0), s.tk, s.tn)],
    );
    b.inst(
        Op::Matmul { accumulate: true },
        b.whole(acc),
        vec![b.whole(lhs), b.whole(rhs)],
    );
    b.end_loop();
    b.inst(Op::Copy, b.whole(res), vec![b.whole(acc)]);
    b.inst(
        Op::Store,
        tile(c, lin(m, tm, 0), lin(n, tn, 0), s.tm, s.tn),
        vec![b.whole(res)],
    );
    b.end_loop();
    b.end_loop();
    b.f
}
