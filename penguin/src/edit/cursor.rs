//! A position in the loop tree, and insertion there, in the manner of Cranelift's `FuncCursor`.
//!
//! A [`Cursor`] borrows the [`Function`] (its `func` field stays usable, to make the statements it
//! then inserts) and stands at one statement of a block: the function's body or a loop's body.
//! [`Cursor::insert_before`] and [`Cursor::insert_after`] put unplaced statements beside it and
//! leave it on the same statement; [`Cursor::replace`] puts statements in its place.
//! [`locate`] and [`locate_loop`] find where a statement or a loop's statement stands.
//!
//! Invariant: a cursor only moves statements into and within blocks; placing a statement that
//! is already in the tree (or placing one twice) is the caller's error, which the verifier
//! reports (every statement appears exactly once in the tree).

use crate::entities::{Axis, Stmt};
use crate::ir::{Function, StmtKind};

/// A statement's place: the loop whose body holds it (`None`: the function's body) and its index
/// there.
pub type Place = (Option<Axis>, usize);

/// Where statement `s` stands in the tree, if it is there.
pub fn locate(func: &Function, s: Stmt) -> Option<Place> {
    let mut found = None;
    func.walk_stmts(|t, loops| {
        if t == s && found.is_none() {
            let parent = loops.last().copied();
            let at = func.block(parent).iter().position(|&b| b == s);
            found = at.map(|at| (parent, at));
        }
    });
    found
}

/// Where loop `a`'s statement stands in the tree, if it is there.
pub fn locate_loop(func: &Function, a: Axis) -> Option<Place> {
    let mut found = None;
    func.walk_stmts(|t, loops| {
        if found.is_none() && func.stmts[t].kind == StmtKind::Loop(a) {
            let parent = loops.last().copied();
            let at = func.block(parent).iter().position(|&b| b == t);
            found = at.map(|at| (parent, at));
        }
    });
    found
}

/// A position at one statement of a block (module doc).
pub struct Cursor<'f> {
    pub func: &'f mut Function,
    parent: Option<Axis>,
    at: usize,
}

impl<'f> Cursor<'f> {
    /// At index `at` of the block of `parent` (`None`: the function's body); `at` may be the
    /// block's length (the end, where [`Cursor::insert_before`] appends).
    pub fn at(func: &'f mut Function, (parent, at): Place) -> Self {
        assert!(
            at <= func.block(parent).len(),
            "a cursor stands inside its block"
        );
        Cursor { func, parent, at }
    }

    /// At statement `s`, if it is in the tree.
    pub fn at_stmt(func: &'f mut Function, s: Stmt) -> Option<Self> {
        let place = locate(func, s)?;
        Some(Cursor::at(func, place))
    }

    /// At loop `a`'s statement, if it is in the tree.
    pub fn at_loop(func: &'f mut Function, a: Axis) -> Option<Self> {
        let place = locate_loop(func, a)?;
        Some(Cursor::at(func, place))
    }

    /// Where the cursor stands.
    pub fn place(&self) -> Place {
        (self.parent, self.at)
    }

    /// The statement the cursor stands at (`None` at the end of the block).
    pub fn current(&self) -> Option<Stmt> {
        self.func.block(self.parent).get(self.at).copied()
    }

    /// Puts `stmts`, in order, just before the current statement; the cursor stays on it.
    pub fn insert_before(&mut self, stmts: impl IntoIterator<Item = Stmt>) {
        let at = self.at;
        let block = self.func.block_mut(self.parent);
        let before = block.len();
        block.splice(at..at, stmts);
        self.at += block.len() - before;
    }

    /// Puts `stmts`, in order, just after the current statement (at the end of the block: there);
    /// the cursor stays on it.
    pub fn insert_after(&mut self, stmts: impl IntoIterator<Item = Stmt>) {
        let at = (self.at + 1).min(self.func.block(self.parent).len());
        self.func.block_mut(self.parent).splice(at..at, stmts);
    }

    /// Takes the current statement out of its block and puts `stmts`, in order, in its place;
    /// returns it (unplaced). The cursor stands at the first of `stmts`, or at what followed.
    pub fn replace(&mut self, stmts: impl IntoIterator<Item = Stmt>) -> Stmt {
        let at = self.at;
        let block = self.func.block_mut(self.parent);
        let old = *block.get(at).expect("the cursor stands at a statement");
        block.splice(at..=at, stmts);
        old
    }
}
