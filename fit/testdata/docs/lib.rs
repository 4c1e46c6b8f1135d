//! A bounded ring buffer.

use std::fmt;

/// A ring buffer that keeps the newest `cap` items.
pub struct Ring<T> {
    items: Vec<Option<T>>,
    head: usize,
    len: usize,
}

/// What went wrong when building a ring.
#[derive(Debug)]
pub enum RingError {
    ZeroCapacity,
}

impl<T> Ring<T> {
    /// Creates a ring holding at most `cap` items.
    pub fn new(cap: usize) -> Result<Self, RingError> {
        if cap == 0 {
            return Err(RingError::ZeroCapacity);
        }
        let mut items = Vec::with_capacity(cap);
        items.resize_with(cap, || None);
        Ok(Ring { items, head: 0, len: 0 })
    }

    /// Adds an item, dropping the oldest when full.
    pub fn push(&mut self, item: T) {
        let cap = self.items.len();
        let at = (self.head + self.len) % cap;
        self.items[at] = Some(item);
        if self.len == cap {
            self.head = (self.head + 1) % cap;
        } else {
            self.len += 1;
        }
    }

    /// Returns the number of items held.
    pub fn len(&self) -> usize {
        self.len
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a ring needs a capacity of at least one")
    }
}

pub trait Drain<T> {
    fn drain_all(&mut self) -> Vec<T>;
}

fn wrap(i: usize, cap: usize) -> usize {
    i % cap
}
