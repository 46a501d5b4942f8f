//! Following every reading of one text at once: the one forking driver under [`Verdict`] and
//! [`check_nesting`].
//!
//! A reading steps over the text one token at a time and, where it cannot know how a token reads
//! (a `/`, a `<!--`), pushes the other reading as a fork. The readings advance together, the one
//! furthest behind first (the one just stepped goes on while no other is behind it), and the
//! reading just stepped takes in every other one at its place in the same state (they usually
//! meet within a few tokens: `await /a/;` and `await / a / ;` agree again after the `;`). A
//! reading that meets what its parser rejects is dropped while another one exists. More than
//! [`MAX_READINGS`] readings at once, or more work than a budget, stop them all. So the work
//! stays linear in the text's length, and nothing recurses.
//!
//! What the readings find should not depend on the order they end or merge in: [`Verdict`]
//! keeps the earliest of several refusals.
//!
//! [`Verdict`]: crate::Verdict
//! [`check_nesting`]: crate::check_nesting

use crate::MAX_READINGS;

/// What a step left a reading as.
pub(crate) enum Step {
    /// It goes on.
    Continue,
    /// It is over (at the end of the text, or at an error that ends it); it is kept for its
    /// findings.
    Ended,
    /// It met what its parser rejects (a closer that matches nothing): it is dropped while
    /// another reading exists, and goes on otherwise.
    Unlikely,
}

/// One way of reading a text, as the driver sees it.
pub(crate) trait Reading: Sized {
    /// What stops every reading at once (a crossed limit).
    type Stop;
    /// The byte offset the reading has reached.
    fn position(&self) -> usize;
    /// Reads one token, pushing the other reading of an ambiguous one into `forks`.
    fn step(&mut self, forks: &mut Vec<Self>) -> Result<Step, Self::Stop>;
    /// Whether `other`, at the same place, reads on alike: then the two merge.
    fn same_state(&self, other: &Self) -> bool;
    /// Takes `other`, in the same state, into this reading.
    fn absorb(&mut self, other: Self) -> Result<(), Self::Stop>;
}

/// The readings that ended, and where the driver's own limits stopped the others.
pub(crate) struct Followed<R> {
    /// Readings that ended, in the order they did.
    pub(crate) ended: Vec<R>,
    /// The offset reached by the last step when more than [`MAX_READINGS`] readings were alive
    /// or the work crossed the budget; the live readings are dropped then.
    pub(crate) limit: Option<usize>,
}

/// Follows `readings` (and their forks) to their ends. `budget` bounds the work: the bytes
/// stepped over by all readings, at least one per step.
pub(crate) fn follow<R: Reading>(
    mut others: Vec<R>,
    budget: usize,
) -> Result<Followed<R>, R::Stop> {
    let mut ended = Vec::new();
    let mut forks = Vec::new();
    let mut work = 0usize;
    // `current` is always one of the readings furthest behind; it keeps stepping until another
    // one is behind it.
    let Some(mut current) = take_furthest_behind(&mut others) else {
        return Ok(Followed { ended, limit: None });
    };
    loop {
        let before = current.position();
        let step = current.step(&mut forks)?;
        let at = current.position();
        work = work.saturating_add(at.saturating_sub(before).max(1));
        let goes_on = match step {
            Step::Continue => true,
            Step::Unlikely => others.is_empty(),
            Step::Ended => false,
        };
        others.append(&mut forks);
        if others.len() + usize::from(goes_on) > MAX_READINGS || work > budget {
            return Ok(Followed {
                ended,
                limit: Some(at),
            });
        }
        if goes_on {
            let mut index = 0;
            while let Some(other) = others.get(index) {
                if current.same_state(other) {
                    current.absorb(others.swap_remove(index))?;
                } else {
                    index += 1;
                }
            }
            if let Some(behind) = others
                .iter_mut()
                .filter(|other| other.position() < at)
                .min_by_key(|other| other.position())
            {
                std::mem::swap(&mut current, behind);
            }
            continue;
        }
        let ends = matches!(step, Step::Ended);
        let Some(next) = take_furthest_behind(&mut others) else {
            if ends {
                ended.push(current);
            }
            return Ok(Followed { ended, limit: None });
        };
        let over = std::mem::replace(&mut current, next);
        if ends {
            ended.push(over);
        }
    }
}

/// Takes out the first of the readings furthest behind.
fn take_furthest_behind<R: Reading>(readings: &mut Vec<R>) -> Option<R> {
    let index = readings
        .iter()
        .enumerate()
        .min_by_key(|(_, reading)| reading.position())
        .map(|(index, _)| index)?;
    Some(readings.swap_remove(index))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::{Reading, Step, follow};

    /// A reading of a toy text: `f` forks (the readings differ in `tag` until the next `;`).
    struct Toy {
        text: &'static [u8],
        at: usize,
        tag: u64,
    }

    impl Reading for Toy {
        type Stop = Infallible;

        fn position(&self) -> usize {
            self.at
        }

        fn step(&mut self, forks: &mut Vec<Self>) -> Result<Step, Infallible> {
            let Some(&byte) = self.text.get(self.at) else {
                return Ok(Step::Ended);
            };
            self.at += 1;
            match byte {
                b'f' => {
                    self.tag *= 2;
                    forks.push(Toy {
                        tag: self.tag + 1,
                        ..*self
                    });
                }
                b';' => self.tag = 0,
                _ => {}
            }
            Ok(Step::Continue)
        }

        fn same_state(&self, other: &Self) -> bool {
            self.at == other.at && self.tag == other.tag
        }

        fn absorb(&mut self, _: Self) -> Result<(), Infallible> {
            Ok(())
        }
    }

    fn read(text: &'static [u8], budget: usize) -> (usize, Option<usize>) {
        let Ok(followed) = follow(
            vec![Toy {
                text,
                at: 0,
                tag: 0,
            }],
            budget,
        );
        (followed.ended.len(), followed.limit)
    }

    #[test]
    fn readings_that_meet_in_the_same_state_merge() {
        assert_eq!(read(b"ff;ff;ff;ff;ff;ff;ff;ff;", usize::MAX), (1, None));
        assert_eq!(read(b"ffff", usize::MAX), (16, None));
    }

    #[test]
    fn too_many_readings_or_too_much_work_stop_them_all() {
        assert_eq!(read(b"fffff", usize::MAX), (0, Some(5)));
        assert_eq!(read(b"abcdef", 3), (0, Some(4)));
    }
}
