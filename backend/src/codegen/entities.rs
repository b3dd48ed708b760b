//! The entity references of the emitted kernel and its synchronisation: what the passes after
//! emission ([`crate::codegen::emit`], [`crate::codegen::sync`], [`crate::codegen::hb`],
//! [`crate::codegen::redundant`], [`crate::codegen::assemble`], [`crate::codegen::hoist`]) index
//! their tables by.
//!
//! Each is a `u32` newtype made by `cranelift_entity::entity_impl!` (as Penguin's and BIR's are),
//! indexing a `PrimaryMap` of the structure that owns it, with `SecondaryMap`s for the tables
//! kept beside it. "None" is `Option<Entity>` or `PackedOption<Entity>`, never a sentinel value.
//!
//! **The index spaces after emission**, and who owns them:
//! - [`Node`]: an emitted instruction. `Emitted::nodes` owns them, in program order (so comparing
//!   two nodes compares their program order); the loop tree (`ENode::Inst`), the instance table
//!   (`footprints::Instances`), the synchronisation's waits and signals, and `hb`'s tables are
//!   indexed by them. A semaphore's name is its signaller's op and number (`dma3`).
//! - [`Sem`]: a semaphore. `Sync::semaphores` owns them (their names); each has one signalling
//!   node (`Sync::signal`), and every `Wait` names one. The program's ISA keeps plain numbers
//!   (`Op::Wait { sem }`, `Inst::signal`): the number of `s` there is `s.index()`.
//! - [`WaitId`]: a wait of the synchronisation, numbered in `hb`'s pruning order (node by node,
//!   each node's waits in order); `hb`'s per-wait tables are indexed by it. (Elsewhere a wait is
//!   its node and its index in the node's `Sync::waits`.)
//! - [`Stretch`]: a stretch of one engine's stream, within which a kept wait can make a later one
//!   redundant (`redundant::compute_stretches`); `hb` numbers them to redo one at a time.
//!
//! Left as integers, being dense arithmetic rather than names:
//! - threads, `0 .. 5 + DMA_QUEUES`: the five engines, then the DMA queues (`sync::thread`),
//!   the components of `hb`'s vector clocks;
//! - a node's instances: its linear iteration index over its loops (`footprints::decode`), and
//!   the flat instance numbers and program-order positions of `sync`'s `Order` and `hb`'s
//!   `Conflicts` and walks (`base[node] + instance`, as `u32` where the walks stream them);
//! - a wait's instances in `hb` (`offset[wait] + instance`).
//!
//! **Who decides which waits exist**: [`crate::codegen::sync`] proposes them;
//! [`crate::codegen::hb`] removes those the others imply; [`crate::codegen::redundant`] alone
//! decides the final set (and the signals), by the rule `hb` applies through it;
//! [`crate::codegen::assemble`] prints them and [`crate::codegen::hoist`] moves some before a
//! peeled loop.

use cranelift_entity::entity_impl;

/// An emitted instruction in its loop nest.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(u32);
entity_impl!(Node, "node");

/// A semaphore: signalled by one node, read by the waits on it.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sem(u32);
entity_impl!(Sem, "sem");

/// A stretch of one engine's stream: its nodes in one loop body between the nested loops that
/// hold work of the engine.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stretch(u32);
entity_impl!(Stretch, "stretch");

/// A wait of the synchronisation, in the order the pruning tries them.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaitId(u32);
entity_impl!(WaitId, "wait");
