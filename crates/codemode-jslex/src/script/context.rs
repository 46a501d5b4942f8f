//! What the tokens read so far decide about the next one: the contexts, the previous token
//! and the stack of open brackets.

/// What a `/` means at some point (the default: at the start of a program, a regular
/// expression).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Slash {
    /// The start of a regular expression literal.
    #[default]
    Regex,
    /// A division (`/` or `/=`).
    Division,
    /// Unknown to a tokenizer: read both ways.
    Either,
}

impl Slash {
    /// What a `/` means where it means `self` in one reading and `other` in another.
    pub(crate) fn or(self, other: Slash) -> Slash {
        if self == other { self } else { Slash::Either }
    }
}

/// Where each `/` token was read how (shared by the readings of one program).
pub(super) type SlashLog = std::rc::Rc<std::cell::RefCell<Vec<(usize, Slash)>>>;

/// What a `{` opens at some point, when no pending function or class decides it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum BraceGuess {
    Block,
    Object,
    Unknown,
}

/// Whether a `function` or `class` keyword at some point starts an expression or a declaration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Position {
    Expression,
    Declaration,
    Unknown,
}

/// What the next token means, as decided by the tokens before it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Context {
    pub(super) slash: Slash,
    pub(super) brace: BraceGuess,
    pub(super) function: Position,
}

/// A statement may start: `/` is a regular expression, `{` a block, `function` a declaration.
pub(super) const STATEMENT: Context = Context {
    slash: Slash::Regex,
    brace: BraceGuess::Block,
    function: Position::Declaration,
};
/// An operand is expected: `/` is a regular expression, `{` an object, `function` an expression.
pub(super) const OPERAND: Context = Context {
    slash: Slash::Regex,
    brace: BraceGuess::Object,
    function: Position::Expression,
};
/// A value just ended: `/` divides; `{` and `function` can only follow by automatic semicolon
/// insertion, so they start a statement.
pub(super) const VALUE: Context = Context {
    slash: Slash::Division,
    brace: BraceGuess::Block,
    function: Position::Declaration,
};

impl Context {
    /// The context of a point that is `self` in one reading and `other` in another.
    pub(super) fn or(self, other: Context) -> Context {
        Context {
            slash: self.slash.or(other.slash),
            brace: if self.brace == other.brace {
                self.brace
            } else {
                BraceGuess::Unknown
            },
            function: if self.function == other.function {
                self.function
            } else {
                Position::Unknown
            },
        }
    }
}

/// `await`, `yield` (keyword or identifier) and `of` inside a `for (...)` header.
pub(super) const AWAIT_SAME_LINE: Context = Context {
    slash: Slash::Either,
    brace: BraceGuess::Object,
    function: Position::Expression,
};
pub(super) const AWAIT_NEW_LINE: Context = Context {
    slash: Slash::Either,
    brace: BraceGuess::Unknown,
    function: Position::Unknown,
};

/// The previous significant token: what it makes of the next one, on the same line and after a
/// line break, plus the few tokens that decide what a following `(` or `{` opens.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Prev {
    pub(super) tag: Tag,
    pub(super) same_line: Context,
    pub(super) new_line: Context,
}

impl Prev {
    pub(super) fn plain(context: Context) -> Self {
        Prev {
            tag: Tag::None,
            same_line: context,
            new_line: context,
        }
    }

    pub(super) fn tagged(tag: Tag, context: Context) -> Self {
        Prev {
            tag,
            same_line: context,
            new_line: context,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Tag {
    None,
    /// `.` or `?.`: the next identifier is a property name.
    Dot,
    /// `function`, `function*` or `function name`: the next `(` opens its parameters.
    Function(Position),
    /// `class` or `class Name`: the next `{` opens its body.
    Class(Position),
    /// `async` on the same line as a following `function`, which has this position.
    Async(Position),
    /// `if`, `while`, `with`, `for` (`for await`): the next `(` opens a statement header.
    Header {
        is_for: bool,
    },
    /// `=>`: the next `{` opens an arrow body.
    Arrow,
    /// The `)` closing a function's parameters: the next `{` opens its body.
    Parameters(Position),
    /// `var`, `let`, `const`, or a `,` of their declaration list: the next identifier is a name
    /// the declaration binds; after `break` or `continue`, a label.
    Binding,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Level {
    /// The program itself: a statement list.
    Root,
    Paren(ParenKind),
    Bracket,
    /// `${` of a template literal.
    Substitution,
    Brace(BraceKind),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum ParenKind {
    Header { is_for: bool },
    Parameters(Position),
    Other,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum BraceKind {
    Block,
    Object,
    /// A block or an object literal: the readings differ.
    Unknown,
    Arrow,
    Function(Position),
    Class(Position),
}

impl BraceKind {
    /// What follows the `}` that closes this brace.
    pub(super) fn after_close(self) -> Context {
        let after_body = |position| match position {
            Position::Expression => VALUE,
            Position::Declaration => STATEMENT,
            Position::Unknown => VALUE.or(STATEMENT),
        };
        match self {
            BraceKind::Block | BraceKind::Arrow => STATEMENT,
            BraceKind::Object => VALUE,
            BraceKind::Unknown => VALUE.or(STATEMENT),
            BraceKind::Function(position) | BraceKind::Class(position) => after_body(position),
        }
    }

    /// What follows the `{` itself.
    pub(super) fn after_open(self) -> Context {
        match self {
            BraceKind::Object => OPERAND,
            BraceKind::Unknown => OPERAND.or(STATEMENT),
            _ => STATEMENT,
        }
    }
}

/// One open bracket: what it opened, where, and how many `?` of a conditional wait for their
/// `:` at this level.
#[derive(Clone, Copy, Debug)]
pub(super) struct Open {
    pub(super) level: Level,
    pub(super) at: usize,
    pub(super) conditionals: u32,
    /// Unique to this push (and renewed when `conditionals` changes); see `same_state`.
    pub(super) id: u64,
}
