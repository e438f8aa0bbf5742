//! The SQL layer's error type. Each variant maps to the SQLSTATE a PostgreSQL client
//! expects for it.

use permafrost_storage::StorageError;
use thiserror::Error;

pub type Result<T, E = SqlError> = std::result::Result<T, E>;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum SqlError {
    /// A statement that breaks a rule of SQL's syntax (42601), in PostgreSQL's words: a
    /// message of its own ("INSERT has more expressions than target columns"), or the
    /// parser's beginning "syntax error: ".
    #[error("{0}")]
    Syntax(String),
    /// Text the parser could not read, where it stopped, in PostgreSQL's words: the token
    /// found there (`None` at the end of the text, `;` at the end of a statement the
    /// client ended with one: [`SqlError::before_semicolon`]), and the place (1-based line
    /// and column; line 0 at the end, or when the text parsed was rewritten and the place
    /// is not known in the client's text).
    #[error("syntax error {place}", place = syntax_place(near.as_deref()))]
    SyntaxAt {
        near: Option<String>,
        line: u64,
        column: u64,
    },
    /// A name given twice where names must differ (a table alias in FROM, a WITH query).
    #[error("{0}")]
    DuplicateAlias(String),
    /// A column of `JOIN ... USING` missing from a side (42703), in PostgreSQL's words.
    #[error("{0}")]
    UsingColumnMissing(String),
    /// A column of `JOIN ... USING` found more than once on a side, or named twice (42702).
    #[error("{0}")]
    UsingColumnAmbiguous(String),
    /// A window function where none may be (WHERE, GROUP BY, inside another).
    #[error("{0}")]
    WindowingError(String),
    /// `OVER (w ...)` where window `w` has a frame (42P20); `in_over`: the HINT applies.
    #[error("cannot copy window \"{name}\" because it has a frame clause")]
    CopyFramedWindow { name: String, in_over: bool },
    #[error("window \"{0}\" does not exist")]
    UnknownWindow(String),
    /// A RANGE frame offset over an ORDER BY key of a type it cannot be added to (0A000).
    #[error("RANGE with offset PRECEDING/FOLLOWING is not supported for column type {column}{}", offset.as_ref().map(|o| format!(" and offset type {o}")).unwrap_or_default())]
    RangeOffset { column: String, offset: Option<String> },
    /// A frame offset that is NULL (22004) or negative (22013), in PostgreSQL's words.
    #[error("{message}")]
    FrameOffset { message: String, null: bool },
    /// A column named twice where names must differ (`USING (a, a)`).
    #[error("{0}")]
    DuplicateColumn(String),
    /// A function argument out of its domain (generate_series with a step of zero).
    #[error("{0}")]
    InvalidArgument(String),
    /// A `format()` conversion other than `s`, `I`, `L` (22023).
    #[error("unrecognized format() type specifier \"{0}\"")]
    FormatType(char),
    /// A `format()` string ending inside a conversion (22023).
    #[error("unterminated format() type specifier")]
    FormatUnterminated,
    /// `date_trunc('week', interval)` (0A000), as PostgreSQL refuses it.
    #[error("unit \"week\" not supported for type interval")]
    WeekOfInterval,
    /// A regular expression that does not compile (or uses what is not kept here).
    #[error("{0}")]
    InvalidRegex(String),
    /// An ESCAPE of LIKE or SIMILAR TO that is not one character or empty, or a pattern
    /// that ends in its escape character (22025).
    #[error("{0}")]
    InvalidEscape(&'static str),
    /// The `g` flag given to a function that finds one match or splits (`regexp_match`).
    #[error("{0}() does not support the \"global\" option")]
    RegexGlobal(&'static str),
    /// A NULL where a function takes none (a key of `json_build_object`).
    #[error("{0}")]
    NullArgument(String),
    /// An object used as what it is not (FILTER on a function that is no aggregate).
    #[error("{0}")]
    WrongObjectType(String),
    /// A position or name in ORDER BY or GROUP BY that is no column of the select list.
    #[error("{0}")]
    InvalidColumnReference(String),
    /// A quote, dollar quote or comment left open (scan.rs), in PostgreSQL's words.
    #[error("{0}")]
    Unterminated(String),
    #[error("relation \"{0}\" does not exist")]
    UnknownTable(String),
    #[error("view \"{0}\" does not exist")]
    UnknownView(String),
    #[error("sequence \"{0}\" does not exist")]
    UnknownSequence(String),
    /// DROP TABLE of a table that does not exist (PostgreSQL says "table" there).
    #[error("table \"{0}\" does not exist")]
    UnknownDropTable(String),
    #[error("missing FROM-clause entry for table \"{0}\"")]
    MissingFromEntry(String),
    /// An ON condition reading a relation outside its join (42P01).
    #[error("invalid reference to FROM-clause entry for table \"{0}\"")]
    FromEntryHidden(String),
    /// A LATERAL item on the right of a RIGHT or FULL JOIN reading its left side, named
    /// here (42P10, as PostgreSQL).
    #[error("invalid reference to FROM-clause entry for table \"{0}\"")]
    LateralJoinType(String),
    /// A set-returning function called where one row's value is needed (0A000, as
    /// PostgreSQL), named by the clause it is in.
    #[error("set-returning functions are not allowed in {0}")]
    SetReturningHere(&'static str),
    /// A negative LIMIT (2201W).
    #[error("{0}")]
    InvalidLimit(String),
    /// A negative OFFSET (2201X, as PostgreSQL).
    #[error("OFFSET must not be negative")]
    NegativeOffset,
    /// `ntile` (22014) or `nth_value` (22016) given zero or less.
    #[error("argument of {0} must be greater than zero")]
    NotPositive(&'static str),
    #[error("negative substring length not allowed")]
    NegativeSubstringLength,
    /// A value past PostgreSQL's limit of 1 GB ([`crate::value_budget::MAX_VALUE_BYTES`]).
    #[error("requested length too large")]
    ValueTooLarge,
    /// A value larger than what is left of the statement's `work_mem`.
    #[error(
        "requested length too large: a value of {len} bytes is more than this statement may hold (its {limit} \
         bytes, a quarter of memory_limit, at least 16 MiB)"
    )]
    ValueOverWorkMem { len: usize, limit: usize },
    #[error("{0}")]
    DependentObjects(String),
    /// DROP INDEX of the index of a PRIMARY KEY or UNIQUE constraint.
    #[error("cannot drop index {index} because constraint {index} on table {table} requires it")]
    IndexOfConstraint { index: String, table: String },
    /// An object others depend on (2BP01), with PostgreSQL's DETAIL naming them.
    #[error("cannot drop {what} because other objects depend on it")]
    DependedOn { what: String, detail: String },
    /// An object (a constraint) that does not exist (42704), in PostgreSQL's words.
    #[error("{0}")]
    UnknownObject(String),
    /// An object (a constraint) whose name is taken (42710), in PostgreSQL's words.
    #[error("{0}")]
    DuplicateObject(String),
    /// A value given to an identity column GENERATED ALWAYS (`update`: by UPDATE).
    #[error("{}", if *update { format!("column \"{column}\" can only be updated to DEFAULT") } else { format!("cannot insert a non-DEFAULT value into column \"{column}\"") })]
    GeneratedAlways { column: String, update: bool },
    /// A table named as a type is (a table's name is its row type's, 42710).
    #[error("type \"{0}\" already exists")]
    TypeOfRelationTaken(String),
    /// An enum type's labels as `CREATE TYPE` or `ALTER TYPE` would leave them.
    #[error(transparent)]
    EnumLabel(#[from] permafrost_types::enum_type::EnumError),
    /// A foreign key whose referenced columns are not a key (42830), in PostgreSQL's words.
    #[error("{0}")]
    InvalidForeignKey(String),
    /// A foreign key between columns of types without an equality operator (42804).
    #[error("foreign key constraint \"{name}\" cannot be implemented")]
    ForeignKeyTypes { name: String, detail: String },
    /// A row a CHECK constraint refuses (23514): `detail` shows the row.
    #[error("{message}")]
    CheckViolation { message: String, detail: String },
    /// A CHECK constraint added over rows one of which fails it (23514).
    #[error("check constraint \"{name}\" of relation \"{table}\" is violated by some row")]
    CheckViolatedByRow { name: String, table: String },
    /// A row a foreign key refuses (23503): `detail` names the key.
    #[error("{message}")]
    ForeignKeyViolation { message: String, detail: String },
    /// (Named without its schema, as PostgreSQL names it here.)
    #[error("relation \"{}\" already exists", crate::namespace::bare(.0))]
    DuplicateTable(String),
    #[error("index \"{0}\" does not exist")]
    UnknownIndex(String),
    #[error("constraint \"{name}\" for table \"{table}\" does not exist")]
    UnknownConstraint { name: String, table: String },
    /// `ON CONFLICT (columns)` names columns no unique index covers exactly.
    #[error("there is no unique or exclusion constraint matching the ON CONFLICT specification")]
    NoConflictConstraint,
    #[error("column \"{0}\" does not exist")]
    UnknownColumn(String),
    /// A qualified column reference (`t.c`) the relation has no column for; PostgreSQL
    /// writes it unquoted.
    #[error("column {0} does not exist")]
    UnknownQualifiedColumn(String),
    /// A column an INSERT or UPDATE names that its table does not have.
    #[error("column \"{column}\" of relation \"{table}\" does not exist")]
    UnknownTargetColumn { column: String, table: String },
    #[error("type \"{0}\" does not exist")]
    UnknownType(String),
    #[error("schema \"{0}\" does not exist")]
    UnknownSchema(String),
    #[error("schema \"{0}\" already exists")]
    DuplicateSchema(String),
    /// A name PostgreSQL keeps for itself (`pg_` schemas): 42939.
    #[error("{0}")]
    ReservedName(String),
    /// `OWNED BY` naming something other than `table.column` or NONE.
    #[error("invalid OWNED BY option")]
    OwnedByOption,
    #[error("column reference \"{0}\" is ambiguous")]
    AmbiguousColumn(String),
    #[error("function {0} does not exist")]
    UnknownFunction(String),
    /// A function or procedure named by what PostgreSQL words itself (42883): `LANGUAGE
    /// internal AS 'x'` naming no built-in one.
    #[error("{0}")]
    UndefinedFunction(String),
    #[error("{0}")]
    Type(String),
    /// An operator no signature of matches its operands' types (42883): `text + integer`.
    #[error("operator does not exist: {0}")]
    NoOperator(String),
    #[error("subquery in FROM must have an alias")]
    SubqueryAlias,
    /// Text that does not read as a value of its type (an array literal).
    #[error("{0}")]
    InvalidText(String),
    #[error("{0}")]
    Grouping(String),
    /// A column read outside an aggregate in a grouped query, neither grouped nor
    /// functionally dependent on a grouped primary key (42803); the name is `alias.column`.
    #[error("column \"{0}\" must appear in the GROUP BY clause or be used in an aggregate function")]
    Ungrouped(String),
    #[error("could not determine data type of parameter ${0}")]
    UnknownParamType(usize),
    #[error("statement expects {expected} parameters, got {got}")]
    ParamCount { expected: usize, got: usize },
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A feature PostgreSQL itself lacks for these arguments (0A000), in its words.
    #[error("{0}")]
    FeatureNotSupported(String),
    /// A definition PostgreSQL refuses as invalid (42P16), in its words.
    #[error("{0}")]
    Definition(String),
    /// A date/time template PostgreSQL refuses (22007), with its HINT.
    #[error("{message}")]
    InvalidDatetimeFormat { message: String, hint: String },
    /// A template or text that does not read (42601), with PostgreSQL's DETAIL.
    #[error("{message}")]
    SyntaxExplained { message: String, detail: String },
    /// A procedure's definition PostgreSQL refuses as invalid (42P13), in its words.
    #[error("{0}")]
    FunctionDefinition(String),
    #[error(
        "row belongs to partition {row} but the transaction runs at partition(s) {held:?}; \
         route the call by this row's partition key"
    )]
    WrongPartition { row: u32, held: Vec<u32> },
    #[error("table \"{0}\" changed since the statement was planned")]
    SchemaChanged(String),
    /// `setval()` of a value outside the sequence's bounds.
    #[error("setval: value {value} is out of bounds for sequence \"{name}\" ({min}..{max})")]
    SequenceBounds {
        value: i64,
        name: String,
        min: i64,
        max: i64,
    },
    /// `currval()` or `lastval()` before the session drew a value (55000).
    #[error("{0}")]
    SequenceNotYetDefined(String),
    /// `nextval()` of a sequence at its MAXVALUE.
    #[error("nextval: reached maximum value of sequence \"{name}\" ({max})")]
    SequenceLimit { name: String, max: i64 },
    /// An interactive transaction's statement no longer gives what its client was shown.
    #[error("could not serialize access: {0}")]
    SerializationFailure(String),
    #[error(
        "canceling statement: nobody waits for its result any more (a cancel request, a statement timeout or a client that went away)"
    )]
    Cancelled,
    #[error(
        "out of memory for this statement: its result and intermediate rows need more than the {0} bytes one statement may hold (work_mem: the session's SET work_mem, else a quarter of memory_limit, at least 16 MiB); narrow it with WHERE or LIMIT"
    )]
    OutOfWorkMem(usize),
    #[error("invalid byte sequence for encoding \"UTF8\": 0x00 (text cannot hold a NUL byte)")]
    NulInText,
    #[error(
        "stack depth limit exceeded: the statement nests more than {} expressions deep",
        crate::caps::MAX_EXPR_DEPTH
    )]
    TooDeep,
    /// A value past what a function can make (54000): `chr(0)`, a code past Unicode's.
    #[error("{0}")]
    ProgramLimit(String),
    /// A math function's argument outside its domain or a result out of range, with
    /// PostgreSQL's SQLSTATE (2201E, 2201F, 22003) and message.
    #[error("{message}")]
    Math {
        sqlstate: &'static str,
        message: &'static str,
    },
    /// A date or time field that makes no date or time (`make_date(2023, 2, 30)`): 22008,
    /// in PostgreSQL's words ("date field value out of range: 2023-02-30").
    #[error("{0}")]
    FieldOutOfRange(String),
    #[error("statement too long: {len} bytes, at most {max} are accepted", len = .0, max = crate::caps::MAX_STATEMENT_BYTES)]
    TooLong(usize),
    #[error(
        "out of memory: running statements hold {held} of the {limit} bytes they may hold together (part of \
         memory_limit); retry when others have finished"
    )]
    StatementMemory { held: usize, limit: usize },
    /// More column aliases than a relation has columns (42P10).
    #[error("{0}")]
    ColumnAliases(String),
    /// A subquery with more columns than where it stands takes (42601).
    #[error("{0}")]
    SubqueryColumns(&'static str),
    /// `INSERT ... ON CONFLICT DO UPDATE` proposed two rows with the same arbiter key
    /// (21000).
    #[error("ON CONFLICT DO UPDATE command cannot affect row a second time")]
    ConflictRowTwice,
    /// `ON CONFLICT DO UPDATE` without a conflict target (42601).
    #[error("ON CONFLICT DO UPDATE requires inference specification or constraint name")]
    ConflictTargetMissing,
    /// A scalar subquery gave more than one row (21000).
    #[error("more than one row returned by a subquery used as an expression")]
    SubqueryRows,
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// An error at a place of the statement's text (PostgreSQL's error cursor): 1-based
    /// line and column of the syntax tree's node it is about ([`SqlError::at`]), and
    /// where from there.
    #[error("{error}")]
    At {
        error: Box<SqlError>,
        line: u64,
        column: u64,
        point: Point,
    },
    /// A temporary file a statement spills to could not be written or read (53100 when
    /// the disk is full, else 58030).
    #[error("could not {what}: {message}")]
    Spill {
        what: String,
        message: String,
        disk_full: bool,
    },
    /// A spill file read back did not hold what was written (XX001).
    #[error("a temporary file of this statement is damaged: {0}")]
    SpillDamaged(String),
    /// A read-only statement ran past its read slice ([`crate::exec::Env::deadline`]): the
    /// executor moves it off its partitions and runs it again there. Never reaches a client.
    #[error("the statement ran past its read slice")]
    SliceOver,
    /// An error raised where the statement ran elsewhere (a forked reader), with the
    /// SQLSTATE it had there.
    #[error("{message}")]
    Relayed { sqlstate: &'static str, message: String },
}

/// Where expression `e` begins in the statement's text, found without recursion (sqlparser's
/// `Spanned::span` recurses through the whole subtree, which may be far deeper than the
/// binder allows when an error is raised before the subtree is bound): down the leftmost
/// operand to a name, literal or call. Empty (no place) for other nodes.
pub fn start_of(e: &sqlparser::ast::Expr) -> sqlparser::tokenizer::Span {
    use sqlparser::ast::Expr as A;
    use sqlparser::tokenizer::Span;
    let at = |s: Span| Span::new(s.start, s.start);
    let mut e = e;
    loop {
        e = match e {
            A::BinaryOp { left, .. } => left,
            A::IsNull(x) | A::IsNotNull(x) | A::IsTrue(x) | A::IsNotTrue(x) | A::IsFalse(x) | A::IsNotFalse(x) => x,
            A::IsDistinctFrom(x, _) | A::IsNotDistinctFrom(x, _) => x,
            A::InList { expr, .. } | A::InSubquery { expr, .. } | A::Between { expr, .. } => expr,
            A::Like { expr, .. } | A::ILike { expr, .. } => expr,
            A::Cast {
                kind: sqlparser::ast::CastKind::DoubleColon,
                expr,
                ..
            } => expr,
            A::Identifier(i) => return at(i.span),
            A::CompoundIdentifier(parts) => return parts.first().map_or(Span::empty(), |i| at(i.span)),
            A::Value(v) => return at(v.span),
            A::Function(f) => {
                return match f.name.0.first() {
                    Some(sqlparser::ast::ObjectNamePart::Identifier(i)) => at(i.span),
                    _ => Span::empty(),
                };
            }
            _ => return Span::empty(),
        };
    }
}

/// Where a query begins in the statement's text (its SELECT), without recursion.
pub fn query_start(q: &sqlparser::ast::Query) -> sqlparser::tokenizer::Span {
    let mut body = q.body.as_ref();
    loop {
        body = match body {
            sqlparser::ast::SetExpr::Select(s) => return s.select_token.0.span,
            sqlparser::ast::SetExpr::SetOperation { left, .. } => left,
            sqlparser::ast::SetExpr::Query(q) => q.body.as_ref(),
            _ => return sqlparser::tokenizer::Span::empty(),
        };
    }
}

/// Where in the text an error placed at a node of the syntax tree points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// At the node's first character.
    Start,
    /// At the token after the node (an operator after its left operand).
    After,
    /// At the character before the node (the parenthesis opening a subquery).
    Before,
    /// At the first parenthesis after the node's start (a named window's definition).
    Paren,
    /// The node is a window function's name: at what follows its OVER (the parenthesis
    /// opening the window, or the window's name).
    Over,
    /// The node is a window function's name: at its frame's first bound.
    FrameStart,
    /// The node is a window function's name: at its frame's second bound (after AND).
    FrameEnd,
}

/// Every SQLSTATE this crate's errors (and the storage and value errors inside them) carry:
/// what [`SqlError::relayed`] maps a relayed code back to.
const SQLSTATES: &[&str] = &[
    "08P01", "0A000", "21000", "22001", "22003", "22007", "22008", "2200H", "22011", "22012", "2201B", "2201W",
    "2201X", "22004", "22021", "22023", "22014", "22016", "2201E", "2201F", "22P02", "23502", "23503", "23505",
    "23514", "2BP01", "40001", "42601", "42701", "42702", "42703", "42704", "42710", "42712", "42723", "42803",
    "42804", "42809", "42883", "42P01", "42P07", "42830", "42P10", "42P16", "42P18", "42P20", "53100", "53200",
    "54000", "58030", "54001", "42602", "428C9", "55000", "57014", "57P01", "P0001", "XX000", "XX001", "3F000",
    "42P06", "42939",
];

impl SqlError {
    pub fn sqlstate(&self) -> &'static str {
        match self {
            SqlError::Syntax(_) | SqlError::SyntaxAt { .. } | SqlError::Unterminated(_) => "42601",
            SqlError::DuplicateAlias(_) => "42712",
            SqlError::InvalidColumnReference(_) | SqlError::LateralJoinType(_) => "42P10",
            SqlError::WrongObjectType(_) => "42809",
            SqlError::UsingColumnMissing(_) => "42703",
            SqlError::UsingColumnAmbiguous(_) => "42702",
            SqlError::DuplicateColumn(_) => "42701",
            SqlError::WindowingError(_) | SqlError::CopyFramedWindow { .. } => "42P20",
            SqlError::UnknownWindow(_) => "42704",
            SqlError::RangeOffset { .. } | SqlError::SetReturningHere(_) => "0A000",
            SqlError::FrameOffset { null: true, .. } => "22004",
            SqlError::FrameOffset { null: false, .. } => "22013",
            SqlError::UnknownTable(_)
            | SqlError::UnknownView(_)
            | SqlError::UnknownSequence(_)
            | SqlError::UnknownDropTable(_)
            | SqlError::MissingFromEntry(_)
            | SqlError::FromEntryHidden(_) => "42P01",
            SqlError::InvalidLimit(_) => "2201W",
            SqlError::NegativeOffset => "2201X",
            SqlError::NegativeSubstringLength => "22011",
            SqlError::NotPositive("ntile") => "22014",
            SqlError::NotPositive(_) => "22016",
            SqlError::ValueTooLarge | SqlError::ValueOverWorkMem { .. } => "54000",
            SqlError::DependentObjects(_) | SqlError::IndexOfConstraint { .. } => "2BP01",
            SqlError::InvalidForeignKey(_) => "42830",
            SqlError::DependedOn { .. } => "2BP01",
            SqlError::DuplicateObject(_) => "42710",
            SqlError::EnumLabel(e) => e.sqlstate(),
            SqlError::TypeOfRelationTaken(_) => "42710",
            SqlError::GeneratedAlways { .. } => "428C9",
            SqlError::UnknownObject(_) => "42704",
            SqlError::ForeignKeyTypes { .. } => "42804",
            SqlError::ForeignKeyViolation { .. } => "23503",
            SqlError::CheckViolation { .. } | SqlError::CheckViolatedByRow { .. } => "23514",
            SqlError::DuplicateTable(_) => "42P07",
            SqlError::UnknownIndex(_) | SqlError::UnknownConstraint { .. } => "42704",
            SqlError::NoConflictConstraint => "42P10",
            SqlError::UnknownColumn(_) | SqlError::UnknownQualifiedColumn(_) | SqlError::UnknownTargetColumn { .. } => {
                "42703"
            }
            SqlError::UnknownType(_) => "42704",
            SqlError::UnknownSchema(_) => "3F000",
            SqlError::OwnedByOption => "42601",
            SqlError::DuplicateSchema(_) => "42P06",
            SqlError::ReservedName(_) => "42939",
            SqlError::AmbiguousColumn(_) => "42702",
            SqlError::UnknownFunction(_) | SqlError::UndefinedFunction(_) | SqlError::NoOperator(_) => "42883",
            SqlError::SubqueryAlias => "42601",
            SqlError::Type(_) => "42804",
            SqlError::InvalidText(_) => "22P02",
            SqlError::Grouping(_) | SqlError::Ungrouped(_) => "42803",
            SqlError::UnknownParamType(_) => "42P18",
            SqlError::ParamCount { .. } => "08P01",
            SqlError::Unsupported(_) | SqlError::FeatureNotSupported(_) => "0A000",
            SqlError::Definition(_) => "42P16",
            SqlError::FunctionDefinition(_) => "42P13",
            SqlError::SyntaxExplained { .. } => "42601",
            SqlError::InvalidDatetimeFormat { .. } => "22007",
            SqlError::WrongPartition { .. } | SqlError::InvalidArgument(_) => "22023",
            SqlError::InvalidRegex(_) => "2201B",
            SqlError::WeekOfInterval => "0A000",
            SqlError::FormatType(_) | SqlError::FormatUnterminated => "22023",
            SqlError::RegexGlobal(_) => "22023",
            SqlError::InvalidEscape(_) => "22025",
            SqlError::NullArgument(_) => "22004",
            SqlError::SchemaChanged(_) => "0A000",
            SqlError::SerializationFailure(_) => "40001",
            SqlError::SequenceBounds { .. } => "22003",
            SqlError::SequenceLimit { .. } => "2200H",
            SqlError::SequenceNotYetDefined(_) => "55000",
            SqlError::TooDeep => "54001",
            SqlError::NulInText => "22021",
            SqlError::Cancelled => "57014",
            SqlError::OutOfWorkMem(_) => "54000",
            SqlError::SubqueryRows | SqlError::ConflictRowTwice => "21000",
            SqlError::ConflictTargetMissing => "42601",
            SqlError::SubqueryColumns(_) => "42601",
            SqlError::ColumnAliases(_) => "42P10",
            SqlError::TooLong(_) | SqlError::ProgramLimit(_) => "54000",
            SqlError::Math { sqlstate, .. } => sqlstate,
            SqlError::FieldOutOfRange(_) => "22008",
            SqlError::StatementMemory { .. } => "53200",
            SqlError::Storage(e) => e.sqlstate(),
            SqlError::At { error, .. } => error.sqlstate(),
            SqlError::Spill { disk_full: true, .. } => "53100",
            SqlError::Spill { .. } => "58030",
            SqlError::SpillDamaged(_) => "XX001",
            SqlError::SliceOver => "XX000",
            SqlError::Relayed { sqlstate, .. } => sqlstate,
        }
    }

    /// The error `message` with SQLSTATE `code`, raised elsewhere (a forked reader) and
    /// carried here as text; a code none of this crate's errors has becomes XX000.
    pub fn relayed(code: &str, message: String) -> SqlError {
        let sqlstate = SQLSTATES.iter().find(|&&c| c == code).copied().unwrap_or("XX000");
        SqlError::Relayed { sqlstate, message }
    }

    /// PostgreSQL's DETAIL for the error, where there is more to say than its message.
    pub fn detail(&self) -> Option<String> {
        match self {
            SqlError::Storage(e) => e.detail(),
            SqlError::EnumLabel(e) => e.detail(),
            SqlError::GeneratedAlways { column, .. } => Some(format!(
                "Column \"{column}\" is an identity column defined as GENERATED ALWAYS."
            )),
            SqlError::At { error, .. } => error.detail(),
            SqlError::ForeignKeyTypes { detail, .. }
            | SqlError::ForeignKeyViolation { detail, .. }
            | SqlError::CheckViolation { detail, .. }
            | SqlError::DependedOn { detail, .. }
            | SqlError::SyntaxExplained { detail, .. } => Some(detail.clone()),
            SqlError::WeekOfInterval => Some("Months usually have fractional weeks.".to_string()),
            SqlError::ReservedName(_) => Some("The prefix \"pg_\" is reserved for system schemas.".to_string()),
            SqlError::LateralJoinType(_) => {
                Some("The combining JOIN type must be INNER or LEFT for a LATERAL reference.".to_string())
            }
            _ => None,
        }
    }

    /// PostgreSQL's HINT for the error: what to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            SqlError::DependedOn { what, .. } if what.starts_with("type ") => {
                Some("Drop the columns of the type first, or change their type (ALTER TABLE ... ALTER COLUMN ... TYPE text).".to_string())
            }
            SqlError::DependedOn { what, .. } if what.starts_with("schema ") => {
                Some("Drop the objects in it first (DROP SCHEMA ... CASCADE is not supported).".to_string())
            }
            SqlError::DependedOn { what, .. } if what.starts_with("sequence ") => {
                Some("Drop the column's default first (ALTER TABLE ... ALTER COLUMN ... DROP DEFAULT).".to_string())
            }
            SqlError::DependedOn { .. } => Some(
                "Drop the dependent constraint first (ALTER TABLE ... DROP CONSTRAINT), or drop the tables together \
                 in one DROP TABLE."
                    .to_string(),
            ),
            SqlError::GeneratedAlways { update: false, .. } => Some(
                "Leave the column out or write DEFAULT for it (OVERRIDING SYSTEM VALUE is not supported).".to_string(),
            ),
            SqlError::TypeOfRelationTaken(_) => Some(
                "A relation has an associated type of the same name, so you must use a name that doesn't conflict with \
                 any existing type."
                    .to_string(),
            ),
            SqlError::UnknownFunction(_) => Some(
                "No function matches the given name and argument types. You might need to add explicit type casts."
                    .to_string(),
            ),
            SqlError::NoOperator(_) => Some(
                "No operator matches the given name and argument types. You might need to add explicit type casts."
                    .to_string(),
            ),
            SqlError::SubqueryAlias => Some("For example, FROM (SELECT ...) [AS] foo.".to_string()),
            SqlError::OwnedByOption => Some("Specify OWNED BY table.column or OWNED BY NONE.".to_string()),
            SqlError::FormatType(_) | SqlError::FormatUnterminated => {
                Some("For a single \"%\" use \"%%\".".to_string())
            }
            SqlError::InvalidDatetimeFormat { hint, .. } => Some(hint.clone()),
            SqlError::InvalidEscape("invalid escape string") => {
                Some("Escape string must be empty or one character.".to_string())
            }
            SqlError::RegexGlobal("regexp_match") => Some("Use the regexp_matches function instead.".to_string()),
            SqlError::IndexOfConstraint { index, table } => {
                Some(format!("You can drop constraint {index} on table {table} instead."))
            }
            SqlError::ConflictRowTwice => Some(
                "Ensure that no rows proposed for insertion within the same command have duplicate constrained values."
                    .to_string(),
            ),
            SqlError::ConflictTargetMissing => Some("For example, ON CONFLICT (column_name).".to_string()),
            SqlError::FromEntryHidden(name) => Some(format!(
                "There is an entry for table \"{name}\", but it cannot be referenced from this part of the query."
            )),
            SqlError::RangeOffset { offset: Some(_), .. } => {
                Some("Cast the offset value to an appropriate type.".to_string())
            }
            SqlError::CopyFramedWindow { in_over: true, .. } => {
                Some("Omit the parentheses in this OVER clause.".to_string())
            }
            SqlError::At { error, .. } => error.hint(),
            SqlError::Storage(StorageError::Value(permafrost_types::ValueError::DatetimeOutOfRange {
                datestyle: true,
                ..
            })) => Some("Perhaps you need a different \"datestyle\" setting.".to_string()),
            _ => None,
        }
    }

    /// Where in `text`, the statement it came from, the error lies (a byte offset):
    /// PostgreSQL's error cursor. The place the parser stopped, or the first mention of the
    /// name an error is about (a column, table or function that does not exist).
    pub fn offset_in(&self, text: &str) -> Option<usize> {
        match self {
            SqlError::SyntaxAt { near: None, .. } => Some(text.len()),
            SqlError::SyntaxAt {
                near: Some(t), line: 0, ..
            } if t == ";" => Some(text.len()),
            SqlError::SyntaxAt { line, column, .. } if *line > 0 => place_in(text, *line, *column),
            SqlError::At {
                line, column, point, ..
            } => {
                let at = place_in(text, *line, *column)?;
                match point {
                    Point::Start => Some(at),
                    // The node ends at (line, column), inclusive.
                    Point::After => text
                        .get(at..)?
                        .char_indices()
                        .skip(1)
                        .find(|(_, c)| !c.is_whitespace())
                        .map(|(i, _)| at + i),
                    Point::Before => text
                        .get(..at)?
                        .char_indices()
                        .rev()
                        .find(|(_, c)| !c.is_whitespace())
                        .map(|(i, _)| i),
                    Point::Paren => text.get(at..)?.find('(').map(|i| at + i),
                    Point::Over | Point::FrameStart | Point::FrameEnd => over_place(text, at, *point),
                }
            }
            // A qualified name is pointed at from its schema, as PostgreSQL does.
            SqlError::UnknownTable(name) => {
                let mut at = find_name(text, name).or_else(|| find_name(text, name.rsplit('.').next()?))?;
                while let Some(before) = text[..at].strip_suffix('.') {
                    let word = before.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '"');
                    at = word.len();
                }
                Some(at)
            }
            SqlError::UnknownColumn(name)
            | SqlError::AmbiguousColumn(name)
            | SqlError::MissingFromEntry(name)
            | SqlError::Ungrouped(name) => find_name(text, name.rsplit('.').next()?),
            SqlError::UnknownQualifiedColumn(name) => find_name(text, name.split('.').next()?),
            SqlError::UnknownTargetColumn { column, .. } => find_name(text, column),
            SqlError::UnknownType(name) => find_name(text, name),
            // At the ON of ON CONFLICT.
            SqlError::ConflictTargetMissing => {
                let at = find_name(text, "conflict")?;
                text[..at].trim_end().len().checked_sub(2)
            }
            SqlError::UnknownFunction(call) => find_name(text, call.split('(').next()?),
            _ => None,
        }
    }

    /// The error of a statement the client ended with `;` (which PostgreSQL's parser
    /// reads as a token): a syntax error at the end of its text is one at or near ";".
    pub fn before_semicolon(self) -> SqlError {
        match self {
            SqlError::SyntaxAt { near: None, .. } => SqlError::SyntaxAt {
                near: Some(";".into()),
                line: 0,
                column: 0,
            },
            e => e,
        }
    }

    /// This error placed at `span` of the statement's text ([`Point`]), unless it has a
    /// place already or the span is empty (a node sqlparser gives none).
    pub fn at(self, span: sqlparser::tokenizer::Span, point: Point) -> SqlError {
        let place = if point == Point::After { span.end } else { span.start };
        if place.line == 0 || !self.placeable() {
            return self;
        }
        SqlError::At {
            error: Box::new(self),
            line: place.line,
            column: place.column,
            point,
        }
    }

    /// Whether [`SqlError::at`] would place the error: not one that finds its place in the
    /// text itself ([`SqlError::offset_in`]) or has one already, nor one about the
    /// statement as a whole (its size, its depth: finding a node's span of a tree too deep
    /// would recurse as deep).
    pub fn placeable(&self) -> bool {
        !matches!(
            self,
            SqlError::SyntaxAt { .. }
                | SqlError::At { .. }
                | SqlError::UnknownColumn(_)
                | SqlError::UnknownQualifiedColumn(_)
                | SqlError::UnknownTargetColumn { .. }
                | SqlError::AmbiguousColumn(_)
                | SqlError::UnknownTable(_)
                | SqlError::MissingFromEntry(_)
                | SqlError::UnknownFunction(_)
                | SqlError::UnknownType(_)
                | SqlError::Ungrouped(_)
                | SqlError::TooDeep
                | SqlError::TooLong(_)
                | SqlError::StatementMemory { .. }
                | SqlError::OutOfWorkMem(_)
                | SqlError::Cancelled
        )
    }

    pub fn is_retryable(&self) -> bool {
        match self {
            SqlError::StatementMemory { .. } => true,
            SqlError::Storage(e) => e.is_retryable(),
            SqlError::At { error, .. } => error.is_retryable(),
            _ => false,
        }
    }
}

/// The byte offset in `text` of 1-based `line` and `column` (in characters); the end of
/// the line for a column past it.
fn place_in(text: &str, line: u64, column: u64) -> Option<usize> {
    let start = text
        .split_inclusive('\n')
        .take((line as usize).checked_sub(1)?)
        .map(str::len)
        .sum::<usize>();
    let line_text = text.get(start..)?;
    let skip = (column as usize).saturating_sub(1);
    Some(start + line_text.char_indices().nth(skip).map_or(line_text.len(), |(i, _)| i))
}

/// Where in `text` part `point` of the window call whose name starts at byte `at` lies:
/// past the name's argument list (and a FILTER clause), the OVER keyword, then the window;
/// its frame's first bound follows ROWS, RANGE or GROUPS (and BETWEEN), the second AND.
fn over_place(text: &str, at: usize, point: Point) -> Option<usize> {
    let b = text.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    // Past the parenthesized group opening at `i` (quotes skipped).
    let group_end = |mut i: usize| -> Option<usize> {
        let mut depth = 0usize;
        let mut quote = None;
        while i < b.len() {
            match (quote, b[i]) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, c @ (b'\'' | b'"')) => quote = Some(c),
                (None, b'(') => depth += 1,
                (None, b')') => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    };
    let word_at = |i: usize, w: &str| {
        text.get(i..i + w.len()).is_some_and(|t| t.eq_ignore_ascii_case(w))
            && !b
                .get(i + w.len())
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    let mut i = group_end(at + text.get(at..)?.find('(')?)?;
    i = skip_ws(i);
    if word_at(i, "filter") {
        i = group_end(i + text.get(i..)?.find('(')?)?;
        i = skip_ws(i);
    }
    if !word_at(i, "over") {
        return None;
    }
    let open = skip_ws(i + 4);
    if point == Point::Over {
        return Some(open);
    }
    // The frame's words, at the window's own depth.
    let (close, mut depth, mut j) = (group_end(open)?, 0usize, open + 1);
    let mut start = None;
    while j < close {
        match b[j] {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            _ if depth == 0 && (j == 0 || !b[j - 1].is_ascii_alphanumeric()) => {
                if start.is_none() && ["rows", "range", "groups"].iter().any(|w| word_at(j, w)) {
                    let after = skip_ws(j + text[j..].find(|c: char| c.is_whitespace())?);
                    start = Some(if word_at(after, "between") {
                        skip_ws(after + 7)
                    } else {
                        after
                    });
                    if point == Point::FrameStart {
                        return start;
                    }
                    j = start?;
                    continue;
                }
                if start.is_some() && word_at(j, "and") {
                    return Some(skip_ws(j + 3));
                }
            }
            _ => {}
        }
        j += 1;
    }
    start
}

/// Where a syntax error lies, in PostgreSQL's words.
fn syntax_place(near: Option<&str>) -> String {
    match near {
        Some(token) => format!("at or near \"{token}\""),
        None => "at end of input".to_string(),
    }
}

/// The byte offset of the first mention of `name` in `text` as a word of its own (in any
/// case, quoted or not), outside string literals and comments.
fn find_name(text: &str, name: &str) -> Option<usize> {
    if name.is_empty() {
        return None;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if let Some(literal) = rest.strip_prefix('\'') {
            // Past the literal ('' inside it included).
            i += 1 + literal.find('\'').map_or(literal.len(), |e| e + 1);
            continue;
        }
        if rest.starts_with("--") {
            i += rest.find('\n').unwrap_or(rest.len());
            continue;
        }
        let before_ok = i == 0 || !text[..i].chars().next_back().is_some_and(is_word);
        if before_ok
            && rest.len() >= name.len()
            && rest.is_char_boundary(name.len())
            && rest[..name.len()].eq_ignore_ascii_case(name)
            && !rest[name.len()..].chars().next().is_some_and(is_word)
        {
            // A quoted name is pointed at from its opening quote, as PostgreSQL does.
            let quoted = text[..i].ends_with('"') && rest[name.len()..].starts_with('"');
            return Some(if quoted { i - 1 } else { i });
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Part of a statement as a "not supported" message names it: its text, cut to 60
/// characters.
pub(crate) fn shown(x: &impl std::fmt::Display) -> String {
    let text = x.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

pub(crate) fn unsupported<T>(what: impl Into<String>) -> Result<T> {
    Err(SqlError::Unsupported(what.into()))
}

impl From<permafrost_types::ValueError> for SqlError {
    fn from(e: permafrost_types::ValueError) -> SqlError {
        SqlError::Storage(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_point_where_postgresql_points() {
        let near = |line, column| SqlError::SyntaxAt {
            near: Some("x".into()),
            line,
            column,
        };
        assert_eq!(near(1, 1).offset_in("SELEC 1"), Some(0));
        assert_eq!(near(2, 3).offset_in("select\n  é from t"), Some(9));
        assert_eq!(near(0, 3).offset_in("select ?"), None, "a rewritten text");
        let end = SqlError::SyntaxAt {
            near: None,
            line: 0,
            column: 0,
        };
        assert_eq!(end.offset_in("select 1 +"), Some(10));
        assert_eq!(end.to_string(), "syntax error at end of input");
        let semicolon = end.before_semicolon();
        assert_eq!(semicolon.to_string(), "syntax error at or near \";\"");
        assert_eq!(semicolon.offset_in("select 1 +"), Some(10));
        assert_eq!(near(1, 1).to_string(), "syntax error at or near \"x\"");
        assert_eq!(near(1, 1).detail(), None, "PostgreSQL gives none");
        assert_eq!(
            SqlError::UnknownQualifiedColumn("t.b".into()).offset_in("select a, t.b from t"),
            Some(10)
        );
        let col = SqlError::UnknownColumn("nope".into());
        assert_eq!(col.offset_in("select 'nope', nopes, -- nope\n t.NOPE from t"), Some(33));
        assert_eq!(col.offset_in("select \"nope\" from t"), Some(7), "at the opening quote");
        assert_eq!(
            SqlError::UnknownColumn("t.b".into()).offset_in("select a, t.b from t"),
            Some(12)
        );
        assert_eq!(
            SqlError::UnknownFunction("lpadd()".into()).offset_in("select lpadd('a')"),
            Some(7)
        );
        assert_eq!(SqlError::UnknownTable("gone".into()).offset_in("select 1"), None);
    }
}
