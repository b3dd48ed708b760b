//! The semantic checks of the kernel language, producing the resolved form that lowering reads.
//!
//! [`check_module`] walks each kernel once, in program order, with an environment of names. It
//! resolves every name to a value (a compile-time integer, a loop variable, a tile or a
//! parameter), evaluates compile-time integers, turns slice bounds into [`AffineExpr`]s over the
//! enclosing loops, and recognises every operation with its operand shapes and memories. The
//! result, a [`CheckedKernel`], is Penguin IR in all but its maps: lowering copies it over
//! mechanically.
//!
//! The work is split in layers, one analysis or one family of operations per file. A file names
//! (by a path: a type, a free function, a constant) only files of its own layer or of a layer
//! below it, never above, and the files of one layer import each other without a cycle; the
//! `mod` declarations below are grouped by layer, and `tests/no_import_cycles.rs` checks both
//! rules from them. Bottom to top:
//!
//! 0. **Foundations**, which import nothing of the checker: `arith` (checked integer and affine
//!    arithmetic, `MAX_EXTENT`), `nki_names` (NKI's keyword names), `not_in_nkc` (NKI operations
//!    nkc lacks, with what to write instead), `operands` (what the operation checks pass around:
//!    `OpKind`, `Arg`, `Dest`, `Res`, `StmtCtx`).
//! 1. **Values**: `index_vec` (index vectors and mask pieces), `pyvalue` (the Python values,
//!    including the data of classes, instances, partials, direct-allocation buffers and keyword
//!    arguments), `loop_scope` (which values outlive a loop's body).
//! 2. **Errors**: `error` (`CheckError`, one variant per problem) and `error_diagnostic` (its code,
//!    span, labels, notes and help).
//! 3. **Compile-time values**: `comptime` (floats, booleans, builtins, `nl.tile_size`, the forms of
//!    expressions), `consts` (integers affine in the loop variables), `calls` (argument binding,
//!    annotation keywords), `slices` (subscripts and their bounds), `vectors` (index vectors,
//!    `nl.ds`, masks), `index_sums` (an index as a start plus terms), and the values of modules:
//!    `alloc_api`, `functools`, `np_array`, `grid`.
//! 4. **Expressions**: `eval_expr` (the kernel's Python, evaluated), `py_access` (attributes and
//!    subscripts), `py_operators` (operators and comparisons), `residualise` (traced expressions
//!    written back in the core language).
//! 5. **Operations**: `core_ops` (emission, elementwise, reductions, activations, masks applied),
//!    `matmul_ops`, `memory_ops` (loads, allocations), the families (`elementwise_ops`,
//!    `random_ops`, `scan_stats_ops`, `top8_ops`, `nisa`, `broadcast`, `broadcast_nd`, `dst`,
//!    `reshape`, `nd`, `tile_nd`, `np_consts`, `indirect`, `pe_tiling`, `psum_banks`), access
//!    patterns (`patterns`, `patterns_nd`) and masks (`mask_guards`, `mask_sums`, `mask_nd`); `ops`,
//!    the dispatcher that resolves a call to its family, sits on top of them.
//! 6. **Statements and execution**: `stmts` (one statement of the core language), `signature`
//!    (the kernel's parameters and `return`), `hw_loops` (hardware loops), `exec` (Python
//!    statements), `functions` (calls of user functions), `classes`, `module_items` (the
//!    module-level pass), `if_guards`, `unroll_axes`, `out_params`.
//!
//! This file owns what every layer shares: the evaluation context ([`Checker`], its scopes and
//! counters), the checker's values ([`Value`], [`TileVal`]) and its output ([`CheckedKernel`]).
//! The layers bound imports, not calls: each file adds methods to `Checker`, and evaluation is
//! re-entrant by nature (an expression calls a user function, whose statements evaluate
//! expressions), so a lower file may call a method an upper file defines; what it may not do is
//! name the upper file's types, functions or constants. Every problem the checks find is a variant
//! of `error::CheckError`, which carries its data and becomes a diagnostic in one place.
//!
//! Invariants:
//! - a kernel is returned as a [`CheckedKernel`] only when it produced no diagnostic; then every
//!   tensor index is a valid `Tensor` (its position in `tensors`), every axis a valid `Axis` (its
//!   position in `loops`), every access lies inside its tensor for every iteration, and each
//!   instruction satisfies the operand rules of its `Op`;
//! - a name whose definition failed is bound to [`Value::Error`]; every use of it is silent, so one
//!   mistake gives one diagnostic;
//! - AST `Error` nodes come from syntax errors already reported, and are skipped silently; a
//!   `Recovered` statement binds its names to [`Value::Error`], so the rest of a file with a
//!   syntax error is still checked without follow-on diagnostics; a kernel with a broken
//!   statement at its top level is not required to `return`.
//!
//! Decisions (documented in the UI corpus too):
//! - a plain integer index `a[i, :]` selects a size-1 range;
//! - names bound inside a loop body are local to the body; using one after the loop is an error,
//!   and so is rebinding inside a loop body a name bound outside it (Python would carry the new
//!   value across iterations; nkc's values are per iteration, so the program is rejected rather
//!   than given another meaning); tiles carry state only through in-place updates;
//! - each undefined name is reported once per kernel; a rejected rebinding keeps the old binding;
//! - a name may bind an integer expression affine in loop variables (`off = i * 128`); where a
//!   compile-time constant is required it must not depend on a loop variable;
//! - `u = t` (a plain name or a slice) binds `u` to the same tile (a view), with no instruction;
//! - `nl.matmul(x, y)` without `transpose_x=True` is `x @ y`: `x` is transposed on the Tensor
//!   engine first, as NKI lowers it (`matmul_ops::matmul_untransposed`);
//! - a statement that produces no instruction (`nl.ndarray`, a view binding) is not lowered;
//! - integer scalars are accepted where float scalars are (`x * 2`);
//! - `nl.zeros` / `nl.ndarray` take a required `dtype` and an optional `buffer` (default SBUF);
//!   `nl.shared_hbm` and `nl.hbm` both mean HBM;
//! - tensor dimensions and loop trip counts are at most 2^24, loop bounds and the coefficients of
//!   loop variables in indices at most 2^24 in magnitude; the HBM arrays of a kernel hold at most
//!   2^27 elements together, and an SBUF tile at most 192 KiB per partition;
//! - temporaries of nested calls are named after their op (`_activation`, `_tensor_scalar`); the
//!   variable a temporary is then assigned to as a whole is recorded (`user_names`), so that logs
//!   can show that name instead (lowering makes the display names).

// layer 0: foundations
mod arith;
// nki_names: NKI's keyword names for parameters nkc spells otherwise.
mod nki_names;
mod not_in_nkc;
mod operands;

// layer 1: values
mod index_vec;
mod loop_scope;
// package_data: the modules of the kernel's package and the files their spans point into.
pub(crate) mod package_data;
mod pyvalue;

// layer 2: errors
pub(crate) mod error;
mod error_diagnostic;

// layer 3: compile-time values
mod calls;
mod comptime;
mod consts;
mod index_sums;
mod slices;
mod vectors;
// alloc_api: NKI's direct-allocation API (`ncc.sbuf.mod_alloc`), as buffer kinds.
mod alloc_api;
mod functools;
mod np_array;
// grid: the SPMD launch grid (nl.program_id, --grid).
pub mod grid;

// layer 4: expressions
mod eval_expr;
mod py_access;
mod py_operators;
mod residualise;

// layer 5: operations
mod acc_register;
mod broadcast;
mod broadcast_nd;
mod broadcast_to_nd;
mod core_ops;
mod deferred_preds;
mod dma_modes;
mod dst;
mod elementwise_ops;
mod gather_ops;
mod matmul_ops;
mod memory_ops;
mod nd;
mod nisa;
mod random_ops;
mod range_select;
mod reshape;
mod row_masks;
mod scan_stats_ops;
mod top8_ops;
mod vector_column;
// tile_nd: on-chip tiles of other than 2 dimensions, HBM reshape, tall nl.load_transpose2d.
mod tile_nd;
mod tile_reshape;
// np_consts: 2-D numpy arrays and the constant HBM tensors of nl.shared_constant.
mod indirect;
mod np_consts;
mod pe_tiling;
// psum_banks: PSUM arrays of several banks, each access within one bank.
mod hbm_ap;
mod hbm_view;
mod mask_guards;
mod mask_nd;
mod mask_sums;
mod ops;
mod patterns;
mod patterns_nd;
mod psum_banks;

// layer 6: statements and execution
mod exec;
pub mod factory;
mod functions;
mod hw_loops;
mod signature;
mod stmts;
// classes: user classes, instances, bound methods, `@dataclass`, `raise`.
mod classes;
// enum_classes: `nl.NKIObject` and `enum.Enum` as base classes.
mod enum_classes;
mod if_guards;
mod module_items;
// package_imports: imports of the kernel's package's other files.
mod package_imports;
mod unroll_axes;
// out_params: outputs passed as parameters (written by nl.store, no return).
mod out_params;

use crate::ast::{self, Span};
use crate::diagnostic::Error;
use error::CheckError;
use penguin::{
    AffineExpr, Axis, AxisAttrs, DType, LoopKind, Memory, Op, Operand, StmtAnnot, Tensor,
    TensorKind,
};
use std::collections::{HashMap, HashSet};
use vocab::machine::SBUF_PARTITION_BYTES as SBUF_BYTES_PER_PARTITION;

/// A kernel that passed every check, ready to lower.
#[derive(Clone, Debug)]
pub struct CheckedKernel {
    pub name: String,
    pub span: Span,
    /// Indexed by `Tensor`: position `i` is `Tensor::new(i)`.
    pub tensors: Vec<CTensor>,
    /// Indexed by `Axis`: position `i` is `Axis::new(i)`; enclosing loops come before the loops
    /// they enclose.
    pub loops: Vec<CLoop>,
    pub params: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
    pub body: Vec<CStmt>,
    /// The variable a temporary (a tensor the checker named, `_exp3`) was then assigned to as a
    /// whole (`y = helper(x)`): the name logs show for it.
    pub user_names: HashMap<Tensor, String>,
    /// The values of each constant tensor (`nl.shared_constant`, kind `Const`), row-major.
    pub consts: std::collections::BTreeMap<Tensor, Vec<f32>>,
    /// Notes for the user that are not diagnostics (`alloc_api`: addresses given by hand are
    /// nkc's to choose).
    pub notes: Vec<String>,
    /// Parameters a reshape stores in rows of another length than their declared shape gives
    /// (`reshape`): the declared shape, which the run's input array has.
    pub restored: std::collections::BTreeMap<Tensor, Vec<u64>>,
    /// HBM arrays declared with an integer dtype, with its NKI name (`uint32`): held as
    /// float32, written as that dtype when they are outputs (`memory_ops`).
    pub int_dtypes: std::collections::BTreeMap<Tensor, &'static str>,
    /// The PSUM arrays of several blocks (`nl.ndarray((K, nl.par_dim(128), 512), ...)`), each
    /// with the diagnostic it gets if it is declared larger than the PSUM and contraction by
    /// lifetime ([`crate::fit_arrays`]) cannot make it fit; and the SBUF arrays of several
    /// blocks declared larger than a partition, with theirs.
    pub arrays: Vec<(Tensor, Option<Error>)>,
}

/// A tensor with its source name (not yet made unique) and binding span.
#[derive(Clone, Debug)]
pub struct CTensor {
    pub name: String,
    pub memory: Memory,
    pub dtype: DType,
    pub shape: [u64; 2],
    pub kind: TensorKind,
    pub span: Span,
}

/// A loop with its source induction-variable name (not yet made unique) and its `for` header span.
#[derive(Clone, Debug)]
pub struct CLoop {
    pub iv: String,
    pub kind: LoopKind,
    pub lb: i64,
    pub ub: i64,
    pub attrs: AxisAttrs,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct CStmt {
    pub kind: CStmtKind,
    pub annot: StmtAnnot,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum CStmtKind {
    /// Nested calls first, in evaluation order, then the outer call.
    Insts(Vec<CInst>),
    Loop {
        axis: Axis,
        body: Vec<CStmt>,
    },
}

#[derive(Clone, Debug)]
pub struct CInst {
    pub op: Op,
    pub dst: Operand,
    pub srcs: Vec<Operand>,
    /// The call (or operator expression) the instruction comes from.
    pub span: Span,
    /// The engine an `engine=` keyword chose; `None` for the operation's default.
    pub engine: Option<penguin::EngineClass>,
    /// The bounds of the call's `mask=` (empty: none), `vectors`.
    pub mask: Vec<penguin::MaskBound>,
    /// The guards of the call's `mask=` on loop indices alone (empty: none), `mask_guards`:
    /// the instruction runs only in the iterations where all hold.
    pub guards: Vec<penguin::Predicate>,
    /// An implicit copy nkc inserted (a Tensor-engine result assigned into SBUF goes through a
    /// PSUM temporary): `engine=` of the call names the engine of the instruction before it.
    pub implicit: bool,
}

/// A tile: a tensor, or a rectangular part of one, or (with `pattern`) an access pattern over
/// one (`patterns`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TileVal {
    pub tensor: Tensor,
    pub start: [AffineExpr; 2],
    /// The value's shape `[partitions, free]`: the box's size, or the pattern's value shape.
    pub size: [u64; 2],
    /// For a slice of an N-D HBM tensor that keeps more than one leading dimension: its shape as
    /// a tile `[P, F]` by NKI's rule (the first kept dimension is the partition axis, the others
    /// flatten onto the free axis), where it differs from the stored rectangle `size`. A load
    /// or store of it moves `size[0] / P` HBM rows per partition (`dma_rows_per_partition`).
    pub view: Option<[u64; 2]>,
    /// The access pattern's value axes (partition axis first), when the tile is not a box.
    pub pattern: Option<penguin::Pattern>,
    /// For a subscript of an N-D HBM tensor: the dimensions it keeps (numpy's shape of the
    /// slice), which a further subscript indexes, whether or not the slice covers the whole
    /// stored array (`cos[b]` of a `[1, S, D]` tensor is `[S, D]`, not `[1, S, D]`).
    pub dims: Option<Vec<u64>>,
    /// For an indirect subscript of an HBM tensor (`t[idx_tile[i_p, 0], i_f]`, indirect.rs):
    /// the `[P, 1]` on-chip tile of row indices. The box (`start`, `size`) is then every row an
    /// index may name, and a load or store of it moves one row per partition: `[P, size[1]]`.
    pub indirect: Option<Box<TileVal>>,
}

impl TileVal {
    fn whole(tensor: Tensor, shape: [u64; 2]) -> Self {
        TileVal {
            tensor,
            start: [AffineExpr::constant(0), AffineExpr::constant(0)],
            size: shape,
            view: None,
            pattern: None,
            dims: None,
            indirect: None,
        }
    }

    /// The tile of partition axis `part` and free axes `free` (steps in stored `[row, column]`)
    /// from `start` of `tensor`: a box when the partitions step one row and the free axes of more
    /// than one element are at most one unit-step run, else the pattern `[part, free...]`.
    pub(crate) fn of_pattern(
        tensor: penguin::Tensor,
        start: [AffineExpr; 2],
        part: penguin::PatAxis,
        free: Vec<penguin::PatAxis>,
    ) -> TileVal {
        let fcount = free.iter().fold(1u64, |n, a| n.saturating_mul(a.count));
        let mut runs = free.iter().filter(|a| a.count > 1);
        let unit = match (runs.next(), runs.next()) {
            (None, _) => true,
            (Some(a), None) => a.step == [0, 1],
            _ => false,
        };
        let pcount = part.count;
        let pattern = (part.step != [1, 0] || !unit).then(|| {
            let mut axes = vec![part];
            axes.extend(free);
            penguin::Pattern { axes }
        });
        TileVal {
            tensor,
            start,
            size: [pcount, fcount],
            pattern,
            view: None,
            dims: None,
            indirect: None,
        }
    }

    /// Whether this is the whole of a tensor of stored shape `shape` (in either layout).
    pub(crate) fn is_whole(&self, shape: [u64; 2]) -> bool {
        let whole = TileVal::whole(self.tensor, shape);
        self.start == whole.start && self.size == whole.size
    }

    /// The tile shape a DMA of this slice gives or takes: the partition-major `view` when it has
    /// one, else the stored rectangle.
    pub(crate) fn tile_shape(&self) -> [u64; 2] {
        if let Some(idx) = &self.indirect {
            return [idx.size[0], self.size[1]];
        }
        self.view.unwrap_or(self.size)
    }

    fn operand(&self) -> Operand {
        // A pattern's access size is its bounding box (`patterns` built it within bounds).
        let size = match &self.pattern {
            None => self.size.to_vec(),
            Some(p) => p.bounding_box(2).unwrap_or_else(|| self.size.to_vec()),
        };
        Operand {
            tensor: self.tensor,
            access: penguin::Access {
                start: self.start.to_vec(),
                size,
                slots: Vec::new(),
                pattern: self.pattern.clone(),
            },
        }
    }
}

/// What a name is bound to.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// An integer, affine in loop variables (constant for a compile-time integer).
    Int(AffineExpr),
    /// A loop's induction variable.
    Iv(Axis),
    /// A tile or array (or a view of one).
    Tile(TileVal),
    /// A kernel parameter.
    Param(Tensor),
    /// A compile-time float (a scalar parameter's default, `eps = 1e-5`).
    Float(f64),
    /// A compile-time boolean (a flag parameter, a comparison).
    Bool(bool),
    /// An index vector (`nl.arange(128)[:, None]`).
    Vec(index_vec::IndexVec),
    /// A mask over index vectors (`m = (i * 128 + i_p < n) & (i_f < d)`): its bounds, for
    /// `mask=m` (`vectors`).
    Mask(index_vec::MaskPieces),
    /// `None`: the default of an optional parameter.
    None,
    /// A binding whose definition failed; uses are silent.
    Error,
    /// Any other compile-time Python value (`pyvalue`): a string, a tuple, a list, a function...
    Py(std::rc::Rc<pyvalue::Py>),
}

impl Checker<'_> {
    /// The value of a scalar kernel argument given by the run (`--arg NAME=VALUE`); a dotted
    /// name (`nl.add`, `np.float32`) is evaluated in the kernel's module, reported at `at` (the
    /// parameter) when it names nothing.
    pub(crate) fn scalar_arg_value(&mut self, a: &crate::ScalarArg, at: &Span) -> Value {
        match a {
            crate::ScalarArg::Int(v) => Value::Int(AffineExpr::constant(*v)),
            crate::ScalarArg::Float(v) => Value::Float(*v),
            crate::ScalarArg::Bool(b) => Value::Bool(*b),
            crate::ScalarArg::None => Value::None,
            crate::ScalarArg::Str(s) => Value::str(s.clone()),
            crate::ScalarArg::Tuple(items) => {
                let items = items.iter().map(|i| self.scalar_arg_value(i, at)).collect();
                Value::tuple(items)
            }
            crate::ScalarArg::Name(parts) => {
                let mut it = parts.iter();
                let Some(first) = it.next() else {
                    return Value::Error;
                };
                let mut e = ast::Expr {
                    kind: ast::ExprKind::Name(first.clone()),
                    span: at.clone(),
                };
                for p in it {
                    e = ast::Expr {
                        kind: ast::ExprKind::Attribute {
                            value: Box::new(e),
                            attr: ast::Ident {
                                name: p.clone(),
                                span: at.clone(),
                            },
                        },
                        span: at.clone(),
                    };
                }
                self.eval(&e).unwrap_or(Value::Error)
            }
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Bound {
    pub value: Value,
    pub span: Span,
    /// Bound by the body of a hardware loop that has ended (`loop_scope`): a later loop's body
    /// may bind the name as one of its own, as it could before.
    pub leaked: bool,
}

/// The most statements and loop iterations one kernel's evaluation may run.
pub(crate) const MAX_STEPS: u64 = 1_000_000;

/// The most elements the HBM arrays of one kernel may hold together: 2^27 (512 MiB of float32),
/// the footprint the simulator allocates at most (`runtime_sim::sim::MAX_HBM_ELEMS`) and the
/// interpreter's too. Checked here, so that `check` rejects what `run` cannot run.
pub const MAX_HBM_ELEMENTS: u64 = 1 << 27;

/// Names that cannot be bound.
pub(crate) const RESERVED: [&str; 3] = ["nl", "nisa", "range"];

/// Checks the module-level items and the kernels (all, or only the one named `kernel`). Returns the
/// checked kernels when there is no diagnostic.
pub fn check_module(
    module: &ast::Module,
    kernel: Option<&str>,
    specs: &crate::Specs,
) -> Result<Vec<CheckedKernel>, Vec<Error>> {
    let args = &specs.args;
    let mut errors = Vec::new();
    package_data::SOURCES.with(|s| s.borrow_mut().modules.clear());
    let globals = module_items::check_items(module, &mut errors, None);

    // A helper (an undecorated function of a module that decorates its kernels) defined again
    // is Python's rebinding of its name: the module's globals hold the last definition
    // (`module_items::check_items`), which every call sees. A kernel defined twice is an error.
    let decorated = module.kernels.iter().any(functions::is_decorated);
    let entry = |k: &ast::Kernel| !decorated || functions::is_decorated(k);
    let mut seen: HashMap<&str, Span> = HashMap::new();
    for k in module.kernels.iter().filter(|k| entry(k)) {
        if let Some(first) = seen.get(k.name.name.as_str()) {
            errors.push(
                CheckError::DuplicateKernel {
                    name: k.name.name.clone(),
                    first: first.clone(),
                    at: k.name.span.clone(),
                }
                .into(),
            );
        } else {
            seen.insert(&k.name.name, k.name.span.clone());
        }
    }

    // factory.rs: `--kernel EXPR`, the function a factory returns.
    if let Some(expr) = kernel.filter(|k| !factory::is_kernel_name(k)) {
        return match factory::check_factory_kernel(module, &globals, expr, specs) {
            Ok(k) if errors.is_empty() => Ok(vec![k]),
            Ok(_) => Err(without_repeats(errors)),
            Err(e) => {
                errors.extend(e);
                Err(without_repeats(errors))
            }
        };
    }

    // With no kernel named: the decorated ones (`@nki.jit`) when there are any (the others are
    // their helpers), else every one.
    let selected: Vec<&ast::Kernel> = match kernel {
        None => module
            .kernels
            .iter()
            .filter(|k| !decorated || functions::is_decorated(k))
            .collect(),
        Some(name) => {
            let found: Vec<&ast::Kernel> = module
                .kernels
                .iter()
                .filter(|k| k.name.name == name)
                .collect();
            if found.is_empty() {
                errors.push(unknown_kernel(module, name));
            }
            found
        }
    };

    let mut checked = Vec::new();
    for k in selected {
        let mut kernel_errors = Vec::new();
        let mut checker = Checker::new(&globals, &mut kernel_errors);
        checker.specs = Some(specs);
        checker.args = Some(args);
        let result = checker.kernel(k);
        if kernel_errors.is_empty() {
            checked.push(result);
        }
        errors.extend(kernel_errors);
    }
    if errors.is_empty() {
        Ok(checked)
    } else {
        Err(without_repeats(errors))
    }
}

/// `errors` with each diagnostic once: the checker runs a statement once per unrolled iteration
/// and per call of a helper, and the same error at the same place says nothing new the second
/// time (the first of each stays, in its order).
fn without_repeats(errors: Vec<Error>) -> Vec<Error> {
    let mut seen: std::collections::HashSet<(&'static str, usize, usize, String, String)> =
        std::collections::HashSet::new();
    (errors.into_iter())
        .filter(|e| {
            seen.insert((
                e.code,
                e.span.start,
                e.span.end,
                e.message.clone(),
                format!("{}{:?}{:?}", e.label, e.secondary, e.notes),
            ))
        })
        .collect()
}

/// Whether a parameter annotation is only a hint (`nt.tensor`, `nki.tensor`, `nl.ndarray`: a
/// tensor type of no shape), so that the run gives the parameter's shape and dtype as for an
/// untyped one; `int`, `float`, `bool`, `str` are scalar annotations, not hints of a tensor.
pub fn annotation_is_hint(ty: &ast::Expr) -> bool {
    signature::is_hint(ty) && signature::scalar_hint(ty).is_none()
}

/// The 2-D shape in which a tensor of shape `dims` (any rank from 1) is stored: `[N]` as
/// `[1, N]`, `[A, B, C]` as `[A·B, C]`; `None` for a shape nkc does not take.
pub fn stored_shape(dims: &[usize]) -> Option<Vec<usize>> {
    let dims: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
    nd::flatten(&dims).map(|s| s.iter().map(|&d| d as usize).collect())
}

/// The def `--kernel EXPR` (a factory's call) evaluates to, for checking the run's parameter
/// names against it; `None` when it does not evaluate to a function.
pub fn factory_kernel_def(module: &ast::Module, kernel: &str) -> Option<ast::Kernel> {
    let mut errors = Vec::new();
    let globals = module_items::check_items(module, &mut errors, None);
    factory::factory_def(module, &globals, kernel)
}

/// The diagnostic for `--kernel NAME` that names no kernel.
pub(crate) fn unknown_kernel(module: &ast::Module, name: &str) -> Error {
    let names: Vec<String> = module
        .kernels
        .iter()
        .map(|k| format!("`{}`", k.name.name))
        .collect();
    CheckError::UnknownKernel {
        name: name.to_string(),
        kernels: names,
        at: 0..0,
    }
    .into()
}

impl Checker<'_> {}

pub(crate) fn reserved(id: &ast::Ident) -> Error {
    error::CheckError::ReservedName {
        name: id.name.clone(),
        at: id.span.clone(),
    }
    .into()
}

/// The state of checking one kernel.
pub(crate) struct Checker<'a> {
    errors: &'a mut Vec<Error>,
    globals: &'a HashMap<String, Bound>,
    /// Innermost last. The first is the kernel's scope; each loop body pushes one.
    scopes: Vec<HashMap<String, Bound>>,
    /// Names bound in a loop body that has ended, with their binding span and whether the name
    /// was the loop variable.
    out_of_scope: HashMap<String, (Span, loop_scope::LoopExit)>,
    /// Undefined names already reported: each is reported once per kernel.
    reported: HashSet<String>,
    tensors: Vec<CTensor>,
    loops: Vec<CLoop>,
    /// The loops enclosing the statement being checked, outermost first.
    enclosing: Vec<Axis>,
    /// The elements of the kernel's HBM arrays so far (saturating).
    hbm_elements: u64,
    /// The shapes a run gives untyped parameters (`None` for module-level items).
    specs: Option<&'a crate::Specs>,
    /// The declared shape of each HBM tensor declared with other than 2 dimensions (`nd`).
    logical: HashMap<Tensor, Vec<u64>>,
    /// The values of the constant tensors made so far (`np_consts`).
    consts: std::collections::BTreeMap<Tensor, Vec<f32>>,
    /// tile_nd: the partition dimension of multi-dimensional tiles, reshaped HBM views.
    tile_nd: tile_nd::TileNdData,
    /// The values a run gives scalar parameters (`--arg`).
    args: Option<&'a crate::Args>,
    /// Set by a Python error: the kernel's evaluation stops.
    stopped: bool,
    /// How many attributes of modules nkc does not model were asked for (`os.environ`): at
    /// module level, a failure made only of these and of unknown names is deferred to the use.
    unknown_module_attrs: usize,
    /// The diagnostics reported so far for uses of module-level names nkc could not evaluate
    /// (`Py::Unrun`): a module statement that failed only on those is host code too.
    unrun_uses: usize,
    /// Of `unrun_uses`, those that are undefined names (counted once, as uses, not as names).
    unrun_undefined: usize,
    /// Statements and loop iterations run so far ([`MAX_STEPS`]).
    steps: u64,
    /// User-function frames open (`functions::MAX_DEPTH`).
    frames: usize,
    /// The module of the kernel's package whose code runs (a function imported from another file,
    /// or that file's module-level statements); `None` for the kernel's own file.
    package: Option<std::rc::Rc<package_data::ModuleData>>,
    /// How many of `enclosing` were open when the current frame was entered.
    loop_base: usize,
    /// The index in `scopes` of the current frame's own scope (the scopes before it are the
    /// frame's closure).
    frame_scope: usize,
    /// Instructions of tile operations traced inside an expression, not yet in their block.
    pending: Vec<CStmt>,
    /// Instructions emitted so far ([`Checker::emit`]), and the Vector engine's accumulation
    /// registers as the last `nisa.tensor_scalar_cumulative` left them (`acc_register`).
    emitted: u64,
    acc_register: Option<acc_register::AccRegister>,
    /// The accumulation register as the last `nisa.range_select` that reduced left it
    /// (`range_select`).
    range_register: Option<range_select::RangeRegister>,
    /// Whether the statement being run is directly in a hardware loop's body.
    in_loop_body: bool,
    /// Temporaries named so far (unique suffixes).
    temp_count: usize,
    /// Random instructions traced so far: the next one's stream number (`random_ops`).
    random_streams: u32,
    /// The spans of the index names of loops that were unrolled (`exec`): a later hardware
    /// loop may take the name again (`hw_loops`).
    unrolled_targets: HashSet<Span>,
    /// The axes of `range` loops being tried as hardware loops (`exec`).
    soft_axes: Vec<Axis>,
    /// Set when such a loop's index needs a value: the loop is unrolled instead.
    need_unroll: bool,
    /// The axes of `nl.affine_range` / `nl.sequential_range` loops being run: `//` or `%` of
    /// their index (not affine, so not a device index) unrolls the loop, whose iterations are
    /// then compile-time values, as NKI's tracer runs them (`exec`).
    div_soft_axes: Vec<Axis>,
    /// For each of `div_soft_axes`: the user-function frame it runs in (`frames`) and how many
    /// scopes were open when its body began. A list bound in one of those scopes and grown in
    /// the body (`tiles.append(t)`) holds one value per iteration, so the loop is unrolled.
    div_soft_scopes: Vec<(usize, usize)>,
    /// For each unrolled loop being run, outermost first: the PSUM tiles `nisa.nc_matmul(dst=)`
    /// has written in it so far; a later matmul into one of them adds to it (`dst`).
    unrolled_matmuls: Vec<HashSet<Tensor>>,
    /// The tensors an instruction traced so far writes (`stmts`): each whole, or, of a PSUM
    /// array of several banks, each block a matmul writes (its access).
    written: HashSet<(Tensor, Option<penguin::Access>)>,
    /// PSUM tiles that a matmul adds to before anything wrote them (`nl.ndarray(...,
    /// buffer=nl.psum)` and a contraction loop of `nisa.nc_matmul(dst=acc, ...)`): the loop that
    /// ends first among those allocated after the tile zeroes it before it starts, as NKI's
    /// first matmul of an accumulation group writes its bank instead of adding (`stmts`). With
    /// each, the destination of that first matmul.
    zero_first: Vec<(Tensor, Operand)>,
    /// The zeroings of `zero_first` placed in the body of an enclosing hardware loop (that
    /// loop's axis, the tile, the zeroed operand): when the loop ends, a body that touches the
    /// tile only by matmuls into it is one accumulation group with the loop it holds, and the
    /// zeroing moves before the loop (`hw_loops::zero_before_loop`).
    zero_placed: Vec<(Axis, Tensor, Operand)>,
    /// True in a kernel's checker (functions defined in it close over its scope).
    kernel_frame: bool,
    /// Untyped parameters with no shape from the run, reported together.
    missing: Vec<(String, Span)>,
    /// The span and name of each value of the kernel's `return`.
    return_items: Vec<(Span, String)>,
    /// [`CheckedKernel::user_names`].
    user_names: HashMap<Tensor, String>,
    /// grid: the launch grid of the run (`--grid`) and the program ids.
    grid: grid::GridData,
    /// out_params: the parameters the kernel stores into.
    out_params: out_params::OutParamsData,
    /// The mask of the call being checked (empty when none): its subscripts are in bounds where
    /// the mask keeps them (`vectors::mask_keeps_in_bounds`).
    active_mask: Vec<penguin::MaskBound>,
    /// deferred_preds: comparisons of two index expressions bound to names, by binding span.
    deferred_preds: HashMap<Span, ast::Expr>,
    /// The guards of the call being checked, common to all pieces of its mask (empty when
    /// none): its subscripts are in bounds in the iterations where they hold
    /// (`mask_guards::all_guarded_boxes`).
    active_guards: Vec<penguin::Predicate>,
    /// if_guards: the tiles created in guarded branches, and the copies open branches make.
    if_guards: if_guards::IfGuardsData,
    /// [`CheckedKernel::notes`].
    notes: Vec<String>,
    /// unroll_axes: the axes of the index grid the statement being traced is unrolled over.
    unroll: unroll_axes::UnrollAxesData,
}

impl<'a> Checker<'a> {
    fn new(globals: &'a HashMap<String, Bound>, errors: &'a mut Vec<Error>) -> Self {
        Checker {
            errors,
            globals,
            scopes: vec![HashMap::new()],
            out_of_scope: HashMap::new(),
            reported: HashSet::new(),
            tensors: Vec::new(),
            loops: Vec::new(),
            enclosing: Vec::new(),
            hbm_elements: 0,
            specs: None,
            logical: HashMap::new(),
            consts: std::collections::BTreeMap::new(),
            tile_nd: tile_nd::TileNdData::default(),
            args: None,
            stopped: false,
            unknown_module_attrs: 0,
            unrun_uses: 0,
            unrun_undefined: 0,
            steps: 0,
            frames: 0,
            package: None,
            loop_base: 0,
            frame_scope: 0,
            pending: Vec::new(),
            emitted: 0,
            acc_register: None,
            range_register: None,
            in_loop_body: false,
            temp_count: 0,
            random_streams: 0,
            unrolled_targets: HashSet::new(),
            soft_axes: Vec::new(),
            need_unroll: false,
            div_soft_axes: Vec::new(),
            div_soft_scopes: Vec::new(),
            unrolled_matmuls: Vec::new(),
            written: HashSet::new(),
            zero_first: Vec::new(),
            zero_placed: Vec::new(),
            kernel_frame: false,
            missing: Vec::new(),
            return_items: Vec::new(),
            user_names: HashMap::new(),
            grid: grid::GridData::default(),
            out_params: out_params::OutParamsData::default(),
            active_mask: Vec::new(),
            deferred_preds: HashMap::new(),
            active_guards: Vec::new(),
            if_guards: if_guards::IfGuardsData::default(),
            notes: Vec::new(),
            unroll: unroll_axes::UnrollAxesData::default(),
        }
    }

    fn error(&mut self, e: impl Into<Error>) {
        self.errors.push(e.into());
    }

    /// The binding of `name` in the innermost scope that has one.
    fn find(&self, name: &str) -> Option<&Bound> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .or_else(
                || match self.package.as_ref().and_then(|m| m.globals.get()) {
                    // A function of another file of the package sees that module's globals.
                    Some(g) => g.get(name),
                    None => self.globals.get(name),
                },
            )
    }

    /// The value of a name used at `span`; reports undefined and out-of-scope names.
    fn lookup(&mut self, name: &str, span: &Span) -> Value {
        if let Some(b) = self.find(name) {
            let v = b.value.clone();
            if let Value::Py(p) = &v {
                if let pyvalue::Py::Unrun(errs) = &**p {
                    // The module-level assignment's own diagnostics, once per kernel.
                    if self.reported.insert(name.to_string()) {
                        let errs = errs.clone();
                        self.unrun_uses += errs.len();
                        self.unrun_undefined += (errs.iter())
                            .filter(|e| e.code == crate::codes::UNDEFINED_NAME)
                            .count();
                        for e in errs {
                            self.error(e.with_secondary(
                                span.clone(),
                                format!("`{name}` is used here, and its module-level assignment could not be evaluated"),
                            ));
                        }
                    }
                    return Value::Error;
                }
            }
            return v;
        }
        if RESERVED.contains(&name) {
            self.error(CheckError::NotAValue {
                name: name.to_string(),
                at: span.clone(),
            });
            return Value::Error;
        }
        if !self.reported.insert(name.to_string()) {
            return Value::Error;
        }
        let e = match self.out_of_scope.get(name) {
            Some((def, why)) => CheckError::OutOfScope {
                name: name.to_string(),
                def: def.clone(),
                why: why.clone(),
                at: span.clone(),
            },
            None => CheckError::UndefinedName {
                name: name.to_string(),
                at: span.clone(),
            },
        };
        self.error(e);
        Value::Error
    }

    /// Binds `name` in the innermost scope.
    fn bind(&mut self, name: &str, value: Value, span: Span) {
        self.out_of_scope.remove(name);
        if matches!(&value, Value::Int(e) if e.as_constant().is_some())
            && self.bound_outside_loop(name)
        {
            // A compile-time int updated in a device loop's body (`aug_assign` allows it): the
            // body is traced once, as NKI's tracer does, so this runs once and rebinds the name
            // where it lives.
            let frame = self.frame_scope.min(self.scopes.len());
            let own = self.scopes[frame..].iter_mut().rev();
            if let Some(scope) = own.into_iter().find(|s| s.contains_key(name)) {
                // A name an earlier loop left bound stays one a later loop may bind anew.
                let leaked = scope.get(name).is_some_and(|b| b.leaked);
                scope.insert(
                    name.to_string(),
                    Bound {
                        value,
                        span,
                        leaked,
                    },
                );
                return;
            }
        }
        let scope = self
            .scopes
            .last_mut()
            .expect("the kernel scope is never popped");
        scope.insert(
            name.to_string(),
            Bound {
                value,
                span,
                leaked: false,
            },
        );
    }

    /// Records `name` as the name the user knows a temporary by, when `tile` is the whole of a
    /// tensor the checker named (`_exp3`) and it has none yet.
    fn note_user_name(&mut self, tile: &TileVal, name: &str) {
        let Some(t) = self.tensors.get(tile.tensor.as_u32() as usize) else {
            return;
        };
        let whole = tile.size == t.shape && tile.start.iter().all(|s| s.as_constant() == Some(0));
        if whole && t.name.starts_with('_') && !name.starts_with('_') {
            self.user_names
                .entry(tile.tensor)
                .or_insert_with(|| name.to_string());
        }
    }

    fn new_tensor(&mut self, t: CTensor) -> Tensor {
        self.check_size(&t);
        self.tensors.push(t);
        Tensor::from_u32((self.tensors.len() - 1) as u32)
    }

    /// The size limits of a new tensor: an SBUF tile fits one partition's SBUF, and the HBM arrays
    /// of the kernel together fit [`MAX_HBM_ELEMENTS`] (reported once, at the array that crosses).
    fn check_size(&mut self, t: &CTensor) {
        let elems = t.shape[0].saturating_mul(t.shape[1]);
        match t.memory {
            Memory::Hbm => {
                let before = self.hbm_elements;
                self.hbm_elements = before.saturating_add(elems);
                if before <= MAX_HBM_ELEMENTS && self.hbm_elements > MAX_HBM_ELEMENTS {
                    self.error(CheckError::HbmTooLarge {
                        total: self.hbm_elements,
                        tensor: t.name.clone(),
                        shape: t.shape,
                        elems,
                        at: t.span.clone(),
                    });
                }
            }
            Memory::Sbuf => {
                let bytes = t.shape[1].saturating_mul(t.dtype.size_bytes());
                if bytes > SBUF_BYTES_PER_PARTITION {
                    self.error(CheckError::SbufTileTooLarge {
                        tensor: t.name.clone(),
                        shape: t.shape,
                        bytes,
                        at: t.span.clone(),
                    });
                }
            }
            Memory::Psum => {}
        }
    }

    fn tensor(&self, t: Tensor) -> &CTensor {
        &self.tensors[t.as_u32() as usize]
    }

    fn loop_data(&self, a: Axis) -> &CLoop {
        &self.loops[a.as_u32() as usize]
    }

    /// Displays an affine expression with loop-variable names.
    fn show(&self, e: &AffineExpr) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = e.fmt_with(&mut s, &|a| self.loop_data(a).iv.clone());
        s
    }
}

/// `[a, b]` for messages.
pub(crate) fn show_shape(s: [u64; 2]) -> String {
    format!("[{}, {}]", s[0], s[1])
}
