//! The stack of open frames, shared between readings so that a fork is O(1).

use std::rc::Rc;

use super::Frame;

/// The open frames, innermost first; the outermost is the root and is never
/// closed.
///
/// Only the innermost frame ever changes, so it is kept inline and the ones
/// around it form an immutable list shared between readings: a fork clones
/// a reading in O(1), and comparing or joining two readings stops where
/// they share frames (usually right below what changed since they forked).
#[derive(Clone)]
pub(super) struct FrameStack {
    top: Frame,
    outer: Outer,
    len: usize,
}

/// The frames around the innermost one.
#[derive(Clone, Default)]
struct Outer(Option<Rc<OuterNode>>);

struct OuterNode {
    frame: Frame,
    outer: Outer,
}

impl Drop for OuterNode {
    /// Iteratively: dropping a long list recursively could itself overflow
    /// the stack.
    fn drop(&mut self) {
        let mut next = self.outer.0.take();
        while let Some(node) = next {
            next = match Rc::try_unwrap(node) {
                Ok(mut node) => node.outer.0.take(),
                // Still shared: the rest lives on.
                Err(_) => None,
            };
        }
    }
}

impl FrameStack {
    pub(super) fn new(root: Frame) -> FrameStack {
        FrameStack {
            top: root,
            outer: Outer::default(),
            len: 1,
        }
    }

    pub(super) fn top(&self) -> &Frame {
        &self.top
    }

    pub(super) fn top_mut(&mut self) -> &mut Frame {
        &mut self.top
    }

    pub(super) fn push(&mut self, frame: Frame) {
        let below = std::mem::replace(&mut self.top, frame);
        let outer = std::mem::take(&mut self.outer);
        self.outer = Outer(Some(Rc::new(OuterNode {
            frame: below,
            outer,
        })));
        self.len += 1;
    }

    /// Close the innermost frame; never the root.
    pub(super) fn pop(&mut self) -> Option<Frame> {
        let node = self.outer.0.take()?;
        let (frame, outer) = match Rc::try_unwrap(node) {
            Ok(mut node) => (node.frame, std::mem::take(&mut node.outer)),
            Err(shared) => (shared.frame, shared.outer.clone()),
        };
        self.outer = outer;
        self.len -= 1;
        Some(std::mem::replace(&mut self.top, frame))
    }

    /// The same brackets are open in both.
    pub(super) fn same_openers(&self, other: &FrameStack) -> bool {
        if self.len != other.len || self.top.opener != other.top.opener {
            return false;
        }
        let (mut mine, mut theirs) = (&self.outer, &other.outer);
        loop {
            match (&mine.0, &theirs.0) {
                (None, None) => return true,
                (Some(a), Some(b)) if Rc::ptr_eq(a, b) => return true,
                (Some(a), Some(b)) if a.frame.opener == b.frame.opener => {
                    mine = &a.outer;
                    theirs = &b.outer;
                }
                _ => return false,
            }
        }
    }

    /// Take the larger chain and floor of each frame of `other` (which has
    /// the same openers); returns how much the sum of the chains grew.
    pub(super) fn join(&mut self, other: &FrameStack) -> usize {
        let mut grown = join_frame(&mut self.top, &other.top);
        let mut differing = Vec::new();
        let (mut mine, mut theirs) = (&self.outer, &other.outer);
        let shared = loop {
            match (&mine.0, &theirs.0) {
                (Some(a), Some(b)) if !Rc::ptr_eq(a, b) => {
                    let mut frame = a.frame;
                    grown += join_frame(&mut frame, &b.frame);
                    differing.push(frame);
                    mine = &a.outer;
                    theirs = &b.outer;
                }
                _ => break mine.clone(),
            }
        };
        let mut outer = shared;
        for frame in differing.into_iter().rev() {
            outer = Outer(Some(Rc::new(OuterNode { frame, outer })));
        }
        self.outer = outer;
        grown
    }
}

/// The larger chain and floor of two frames into `mine`; returns how much its
/// chain grew.
fn join_frame(mine: &mut Frame, theirs: &Frame) -> usize {
    let grown = theirs.chain.saturating_sub(mine.chain);
    mine.chain += grown;
    mine.floor = mine.floor.max(theirs.floor);
    mine.header |= theirs.header;
    grown
}
