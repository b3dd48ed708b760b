//! The machine-cost model that both layers of the backend read: the SBUF/PSUM budget of ring
//! slots ([`budget`]), a loop body's compute and issue cycles ([`loop_cost`]), how often guarded
//! statements run ([`guards`]), the packing of a body's transfers onto the DMA queues
//! ([`queue_pack`]), and the bounds of a kernel as written ([`dep_bound`]).
//!
//! Invariant: nothing here changes a function, and nothing here imports [`crate::transform`]
//! (the costs sit below the passes that weigh them).

pub mod boxes;
pub mod budget;
pub mod dep_bound;
pub mod dma;
pub mod engine_choice;
pub mod estimate;
pub mod guards;
pub mod loop_cost;
pub mod queue_pack;
