//! Byte offsets to the user's 1-based line and column.

/// A 1-based line and column; columns count Unicode scalar values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineColumn {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

impl LineColumn {
    /// The position of byte `offset` in `text` (clamped to the text's end
    /// and to a character boundary).
    pub(crate) fn of_offset(text: &str, offset: usize) -> LineColumn {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = text.get(..end).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        LineColumn {
            line: before.matches('\n').count() + 1,
            column: before.get(line_start..).unwrap_or_default().chars().count() + 1,
        }
    }

    /// The position just after the last character of `text`.
    pub(crate) fn end_of(text: &str) -> LineColumn {
        LineColumn::of_offset(text, text.len())
    }
}

#[cfg(test)]
mod tests {
    use super::LineColumn;

    #[test]
    fn offsets_map_to_one_based_lines_and_character_columns() {
        let text = "ab\ncdé f\n";
        let at = |offset| {
            let position = LineColumn::of_offset(text, offset);
            (position.line, position.column)
        };
        assert_eq!(at(0), (1, 1));
        assert_eq!(at(3), (2, 1));
        // `é` is two bytes but one column; offset 6 is inside it, 7 is after.
        assert_eq!(at(6), (2, 3));
        assert_eq!(at(7), (2, 4));
        assert_eq!(at(8), (2, 5));
        assert_eq!(at(1000), (3, 1));
        let end = LineColumn::end_of("x\nyz");
        assert_eq!((end.line, end.column), (2, 3));
    }
}
