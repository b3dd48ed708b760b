//! The text form of the pseudo-ISA: a parser and a printer that round-trip.
//!
//! `parse(&print(p)) == p` for every program `p` the parser returns (instruction positions aside,
//! which the printer does not write), and `print(&parse(t))` is a fixed point. A malformed program
//! is a [`ParseError`] naming the line and the column; the parser never panics.
//!
//! ```text
//! # comments run to the end of the line
//! tensor a: f32[128, 512] input
//! tensor out: f32[128, 512] output
//! tensor tmp: f32[65536] scratch
//! semaphore loaded
//! engine sp {
//!   dma q0 sbuf.f32[0, 128; 0; 512:1], hbm a[0; 128:512, 512:1] -> loaded
//! }
//! engine dve {
//!   wait loaded >= 1
//!   loop r0 = 0..4 {
//!     @(r0 >= 1) tensor_scalar add sbuf.f32[0, 128; (r0 mod 2)*2048; 512:1], sbuf.f32[0, 128; 0; 512:1], 1.0 line 3 stage 1
//!   }
//! }
//! ```
//!
//! A tensor is an `input` (given), an `output` (returned, starts as zeros) or `scratch` (HBM
//! working memory: uninitialised, a read of an element never written is a run-time error).
//! An access pattern is `MEM.DTYPE[P0, NP; START; SIZE:STRIDE, ...]` (start in bytes, strides in
//! elements), an HBM pattern `hbm NAME[START; SIZE:STRIDE, ...]` (start in elements). Names that
//! look like registers (`r0`, `r12`) are reserved for registers. Registers must be bound by an
//! enclosing `loop`, and tensors and semaphores declared before they are used.
//!
//! Every instruction is `[@(CMP && ...)] OPCODE OPERANDS [-> SEM] [line N] [stage N] [stmt "..."]`,
//! where `-> SEM` signals `SEM` when the instruction completes (a DMA: when its transfer
//! completes) and the three metadata fields feed the trace. `EXPR` is a sum of `C`, `C*rK` and
//! `(rK mod M)*C` terms; `CMP` is `EXPR OP EXPR` with `OP` one of `< <= > >= == !=`. Opcodes:
//!
//! | text | engines | meaning |
//! | --- | --- | --- |
//! | `matmul DST, A, B [acc]` | pe | `DST[M,N] (psum) = A[K,M]ᵀ·B[K,N]` (sbuf), `+= DST` with `acc`; a bf16 operand beside an f32 one is widened (the f32 rate) |
//! | `transpose DST, SRC` | pe | `DST[F,P] (psum) = SRC[P,F]ᵀ` |
//! | `activation FUNC DST, SRC, scale=IMM\|AP[, bias=AP]` | act | `FUNC(SRC*scale + bias)`, scale and bias `[P,1]` tiles or an immediate scale |
//! | `tensor_tensor ALU DST, A, B` | dve, pool | elementwise; a `[P,1]` source broadcasts |
//! | `tensor_scalar ALU DST, SRC, IMM [reverse]` | dve, pool | `SRC alu IMM` (`IMM alu SRC` with `reverse`) |
//! | `reduce sum\|max\|min DST, SRC` | dve | `DST[P,1]` = the reduction of each row of `SRC` |
//! | `copy DST, SRC` | act, dve, pool | converts dtype on store |
//! | `memset DST, IMM` | dve, pool | |
//! | `iota DST, BASE, PSTEP, FSTEP` | pool | `BASE + p*PSTEP + f*FSTEP`, `p` the tile's row, `f` the flat free index |
//! | `dma qN DST, SRC` | sp | HBM to SBUF or back on queue `N` (0..16); elements pair up in row-major order |
//! | `signal SEM` | any | adds one to `SEM` |
//! | `wait SEM >= EXPR` | any | blocks until `SEM` has been signalled `EXPR` times |
//!
//! `FUNC` is one of identity, exp, log, tanh, sigmoid, relu, gelu, sqrt, rsqrt, square,
//! reciprocal; `ALU` one of add, subtract, multiply, divide, maximum, minimum. Immediates are
//! f32 literals as Rust prints them (`1.0`, `-0.0`, `inf`, `NaN`, `1e-45`).
//!
//! The reader and the writer are three files: [`lex`] (tokens, and the [`ParseError`] of the
//! whole reader), [`parse`](mod@parse) (the recursive-descent parser, which also checks that
//! names are declared before use and registers bound by a loop) and [`print`](mod@print) (the
//! printer). The printer does not depend on the reader, nor the reader on the printer.

mod lex;
mod parse;
mod print;

pub use lex::ParseError;
pub use parse::parse;
pub use print::{ap_to_string, expr_to_string, inst_to_string, op_to_string, print};
