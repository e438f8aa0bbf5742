//! Calls of scalar functions (`lower(x)`, `coalesce(a, b)`, `now()`): the function named,
//! its arguments bound and counted, its result type; an aggregate or window call is handed
//! on (bind/aggregate.rs, bind/window.rs). A name no signature matches is 42883, named with
//! its argument types as PostgreSQL names it.

use permafrost_types::{DataType, Value};
use sqlparser::ast::{self, DuplicateTreatment, FunctionArg, FunctionArgExpr, FunctionArguments, Spanned};

use super::{Binder, Typed, object_name};
use crate::error::{Result, SqlError, unsupported};
use crate::expr::json::JsonFrom;
use crate::expr::regex::RegexFn;
use crate::expr::{AggFunc, Expr, Func, MathFunc};

impl Binder<'_> {
    pub(super) fn function(&mut self, f: &ast::Function) -> Result<Typed> {
        let name = object_name(&f.name)?;
        if name == "make_interval" && f.over.is_none() && f.filter.is_none() {
            return self.make_interval(f);
        }
        if !f.within_group.is_empty() {
            return unsupported(format!("WITHIN GROUP ({name})"));
        }
        let mut order: &[ast::OrderByExpr] = &[];
        // `t.*` as an argument is the whole row of `t` (bind/json.rs, `whole_row`), read
        // as `t`.
        let rows: Vec<ast::Expr> = match &f.args {
            FunctionArguments::List(list) => list
                .args
                .iter()
                .filter_map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(n)) => {
                        n.0.last()
                            .and_then(|p| p.as_ident())
                            .cloned()
                            .map(ast::Expr::Identifier)
                    }
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if !rows.is_empty()
            && !matches!(
                name.as_str(),
                "row_to_json" | "to_json" | "to_jsonb" | "json_agg" | "jsonb_agg"
            )
        {
            return unsupported(format!("a whole row (t.*) as an argument of {name}"));
        }
        let mut rows = rows.iter();
        let (args, distinct, star) = match &f.args {
            FunctionArguments::None => (vec![], false, false),
            FunctionArguments::Subquery(q) if name == "array" => {
                return self.subquery(q, crate::plan::tree::SubqueryKind::Array, None);
            }
            FunctionArguments::Subquery(_) => return unsupported("subqueries"),
            FunctionArguments::List(list) => {
                let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
                let mut args = vec![];
                let mut star = false;
                for c in &list.clauses {
                    match c {
                        ast::FunctionArgumentClause::OrderBy(keys) => order = keys,
                        other => return unsupported(format!("{other} in a call of {name}")),
                    }
                }
                for a in &list.args {
                    match a {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => args.push(e),
                        FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => star = true,
                        FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(_)) => match rows.next() {
                            Some(row) => args.push(row),
                            None => return unsupported(format!("argument form in {name}")),
                        },
                        _ => return unsupported(format!("argument form in {name}")),
                    }
                }
                (args, distinct, star)
            }
        };
        if let Some(over) = &f.over {
            if f.filter.is_some() {
                return unsupported("FILTER in window functions");
            }
            return self.window(&name, over, &args, distinct, star, f.name.span());
        }
        if matches!(name.as_str(), "row_to_json" | "to_json" | "to_jsonb")
            && f.filter.is_none()
            && !distinct
            && let [a] = args.as_slice()
            && let Some(row) = self.whole_row(a)?
        {
            return Ok(match name.as_str() {
                "to_jsonb" => {
                    let f = Func::ToJson {
                        from: JsonFrom::Document,
                        jsonb: true,
                    };
                    (Expr::Func(f, vec![row]), Some(DataType::Jsonb))
                }
                _ => (row, Some(DataType::Json)),
            });
        }
        if super::sequence::SEQUENCE_FUNCTIONS.contains(&name.as_str()) && f.filter.is_none() && !distinct && !star {
            return self.sequence_function(&name, &args);
        }
        // `timezone(zone, x)` is `x AT TIME ZONE zone`.
        if name == "timezone" && args.len() == 2 && f.filter.is_none() && !distinct && !star {
            return self.at_time_zone(args[1], args[0]);
        }
        let agg = match name.as_str() {
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "avg" => Some(AggFunc::Avg),
            "array_agg" => Some(AggFunc::ArrayAgg),
            "string_agg" => Some(AggFunc::StringAgg),
            // (`from` is set when the argument is bound: bind/aggregate.rs.)
            "json_agg" | "jsonb_agg" => Some(AggFunc::JsonAgg {
                jsonb: name == "jsonb_agg",
                from: JsonFrom::Value,
            }),
            "json_object_agg" | "jsonb_object_agg" => Some(AggFunc::JsonObjectAgg {
                jsonb: name == "jsonb_object_agg",
                from: JsonFrom::Value,
            }),
            "bool_and" | "every" => Some(AggFunc::BoolAnd),
            "bool_or" => Some(AggFunc::BoolOr),
            _ => None,
        };
        if let Some(func) = agg {
            return self.aggregate(func, &name, &args, (distinct, star), order, f.filter.as_deref());
        }
        if !order.is_empty() {
            return Err(SqlError::WrongObjectType(format!(
                "ORDER BY specified, but {name} is not an aggregate function"
            )));
        }
        if f.filter.is_some() {
            return Err(SqlError::WrongObjectType(format!(
                "FILTER specified, but {name} is not an aggregate function"
            )));
        }
        if star || distinct {
            return Err(SqlError::Syntax(format!(
                "{name}(*) / {name}(DISTINCT ...) is only valid for aggregates"
            )));
        }
        if let Some(g) = super::inet::inet_function(&name) {
            return self.inet_call(&name, g, &args);
        }
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for &a in &args {
            let (x, t) = self.expr(a)?;
            bound.push(x);
            types.push(t);
        }
        let n = bound.len();
        let signature = || signature(&name, &args, &types);
        let arity = |lo: usize, hi: usize| -> Result<()> {
            if n < lo || n > hi {
                Err(SqlError::UnknownFunction(signature()))
            } else {
                Ok(())
            }
        };
        let first = types.first().copied().flatten();
        if super::array::ARRAY_FUNCTIONS.contains(&name.as_str()) {
            return self.array_function(&name, bound, &types, &signature);
        }
        if super::json::JSON_FUNCTIONS.contains(&name.as_str()) {
            let typed = self.json_function(&name, bound, &types, &signature)?;
            return Ok(typed.expect("a json function"));
        }
        let (func, ty) = match name.as_str() {
            // The transaction's timestamp (logged with it, so replay sees the same one).
            "now" | "current_timestamp" | "transaction_timestamp" => {
                arity(0, 0)?;
                return Ok((Expr::Now, Some(DataType::TimestampTz)));
            }
            // The wall clock, read as the statement runs (and logged with what it read).
            "clock_timestamp" | "statement_timestamp" => {
                arity(0, 0)?;
                let statement = name == "statement_timestamp";
                return Ok((
                    Expr::Func(Func::Clock { statement }, vec![]),
                    Some(DataType::TimestampTz),
                ));
            }
            "pg_typeof" => {
                arity(1, 1)?;
                let name = first.map_or_else(|| "unknown".to_string(), |t| t.sql_name());
                return Ok((Expr::Const(Value::from(name)), Some(DataType::Varchar(None))));
            }
            // date_trunc(unit, x, zone): x's wall-clock time in zone, cut down, read there.
            "date_trunc" if n == 3 => {
                let (zone, zt) = (bound.pop().expect("three"), types[2]);
                if zt.is_some_and(|t| !t.is_text()) || !matches!(types[1], None | Some(DataType::TimestampTz)) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                self.infer(&zone, Some(DataType::Varchar(None)));
                self.infer(&bound[1], Some(DataType::TimestampTz));
                self.infer(&bound[0], Some(DataType::Varchar(None)));
                let t = bound.pop().expect("two");
                let local = Expr::Func(Func::AtTimeZone { to_local: true }, vec![t, zone.clone()]);
                let cut = Expr::Func(Func::DateTrunc, vec![bound.pop().expect("one"), local]);
                let back = Expr::Func(Func::AtTimeZone { to_local: false }, vec![cut, zone]);
                return Ok((back, Some(DataType::TimestampTz)));
            }
            "make_date" | "make_time" | "make_timestamp" | "make_timestamptz" => {
                return self.make_datetime(&name, bound, &types, &signature);
            }
            "date_part" | "date_trunc" => {
                arity(2, 2)?;
                let f = if name == "date_part" {
                    Func::DatePart { numeric: false }
                } else {
                    Func::DateTrunc
                };
                return self.date_function(f, bound, &types, &args, &signature);
            }
            "format" => {
                arity(1, usize::MAX)?;
                if first.is_some_and(|t| !t.is_text()) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                self.infer(&bound[0], Some(DataType::Varchar(None)));
                for b in &bound[1..] {
                    self.infer(b, Some(DataType::Varchar(None)));
                }
                (Func::Format, Some(DataType::Varchar(None)))
            }
            "quote_ident" => {
                arity(1, 1)?;
                if first.is_some_and(|t| !t.is_text()) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                self.infer(&bound[0], Some(DataType::Varchar(None)));
                (Func::QuoteIdent, Some(DataType::Varchar(None)))
            }
            "quote_literal" | "quote_nullable" => {
                arity(1, 1)?;
                self.infer(&bound[0], Some(DataType::Varchar(None)));
                let nullable = name == "quote_nullable";
                (Func::QuoteLiteral { nullable }, Some(DataType::Varchar(None)))
            }
            "to_char" => {
                arity(2, 2)?;
                match types[0] {
                    Some(DataType::Timestamp | DataType::TimestampTz | DataType::Date) => {}
                    Some(t) if t.is_numeric() || t == DataType::Interval => {}
                    _ => return Err(SqlError::UnknownFunction(signature())),
                }
                if types[1].is_some_and(|t| !t.is_text()) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                self.infer(&bound[1], Some(DataType::Varchar(None)));
                (Func::ToChar, Some(DataType::Varchar(None)))
            }
            "justify_days" | "justify_hours" | "justify_interval" => {
                arity(1, 1)?;
                let kind = match name.as_str() {
                    "justify_days" => crate::expr::age::Justify::Days,
                    "justify_hours" => crate::expr::age::Justify::Hours,
                    _ => crate::expr::age::Justify::Interval,
                };
                let x = match types[0] {
                    Some(DataType::Interval) => bound.remove(0),
                    None => Expr::Cast(bound.remove(0).boxed(), DataType::Interval),
                    Some(t) if t.is_text() && is_quoted_literal(args[0]) => {
                        Expr::Cast(bound.remove(0).boxed(), DataType::Interval)
                    }
                    Some(_) => return Err(SqlError::UnknownFunction(signature())),
                };
                return Ok((Expr::Func(Func::Justify(kind), vec![x]), Some(DataType::Interval)));
            }
            // As PostgreSQL resolves it: timestamp with time zone unless every argument
            // is a timestamp (or date).
            "age" => {
                arity(1, 2)?;
                // Quoted literals and parameters take either type.
                let known: Vec<Option<DataType>> = types
                    .iter()
                    .zip(&args)
                    .map(|(t, a)| t.filter(|t| !(t.is_text() && is_quoted_literal(a))))
                    .collect();
                let plain = known.iter().any(Option::is_some)
                    && known
                        .iter()
                        .flatten()
                        .all(|t| matches!(t, DataType::Timestamp | DataType::Date));
                let ty = if plain {
                    DataType::Timestamp
                } else {
                    DataType::TimestampTz
                };
                let mut call = Vec::with_capacity(n);
                for (x, t) in bound.into_iter().zip(&known) {
                    call.push(match t {
                        Some(t) if *t == ty => x,
                        None | Some(DataType::Timestamp | DataType::TimestampTz | DataType::Date) => {
                            Expr::Cast(x.boxed(), ty)
                        }
                        Some(_) => return Err(SqlError::UnknownFunction(signature())),
                    });
                }
                return Ok((Expr::Func(Func::Age, call), Some(DataType::Interval)));
            }
            "localtimestamp" | "current_date" => {
                arity(0, 0)?;
                let ty = if name == "current_date" {
                    DataType::Date
                } else {
                    DataType::Timestamp
                };
                return Ok((Expr::Cast(Expr::Now.boxed(), ty), Some(ty)));
            }
            // No advisory lock is ever held here: releasing them all releases nothing
            // (poolers call it to clean a connection).
            "pg_advisory_unlock_all" => {
                arity(0, 0)?;
                return Ok((Expr::Const(Value::Null), Some(DataType::Varchar(None))));
            }
            // The only schema: what drivers and ORMs ask for when they connect.
            "current_schema" => {
                arity(0, 0)?;
                return Ok((Expr::Const(Value::from("public")), Some(DataType::Varchar(None))));
            }
            "pi" => {
                arity(0, 0)?;
                return Ok((Expr::Func(Func::Pi, vec![]), Some(DataType::Double)));
            }
            // Drawn from the statement's random state, which its log record keeps.
            "random" => {
                arity(0, 0)?;
                return Ok((Expr::Func(Func::Random, vec![]), Some(DataType::Double)));
            }
            "gen_random_uuid" => {
                arity(0, 0)?;
                return Ok((Expr::Func(Func::GenRandomUuid, vec![]), Some(DataType::Uuid)));
            }
            name if MathFunc::named(name).is_some() => {
                let m = MathFunc::named(name).expect("checked");
                arity(m.arity(), m.arity())?;
                self.numeric_args(&bound, &types, &args, &signature, true, &[DataType::Double; 2])?;
                (Func::Math(m), Some(DataType::Double))
            }
            "sign" | "trunc" => {
                let f = if name == "sign" { Func::Sign } else { Func::Trunc };
                arity(1, if f == Func::Trunc { 2 } else { 1 })?;
                let want = if n == 2 {
                    [DataType::Decimal { precision: 0, scale: 0 }, DataType::Integer]
                } else {
                    [DataType::Double; 2]
                };
                self.numeric_args(&bound, &types, &args, &signature, false, &want)?;
                // PostgreSQL's `trunc(x, n)` is numeric's only; of one argument, a
                // double's unless it is numeric.
                let numeric = matches!(first, Some(DataType::Decimal { .. })) || n == 2;
                if n == 2 && matches!(first, Some(DataType::Double)) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                let ty = if numeric {
                    DataType::Decimal { precision: 0, scale: 0 }
                } else {
                    DataType::Double
                };
                (f, Some(ty))
            }
            "mod" => {
                arity(2, 2)?;
                // A parameter takes the other argument's type (PostgreSQL's mod(int, int)
                // for mod(id, $1)).
                let known = types.iter().flatten().copied().find(DataType::is_numeric);
                let want = [known.unwrap_or(DataType::Integer); 2];
                self.numeric_args(&bound, &types, &args, &signature, false, &want)?;
                if types.iter().any(|t| matches!(t, Some(DataType::Double))) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                let ty = match (types[0], types[1]) {
                    (Some(d @ DataType::Decimal { .. }), _) | (_, Some(d @ DataType::Decimal { .. })) => Some(d),
                    (Some(DataType::BigInt), _) | (_, Some(DataType::BigInt)) => Some(DataType::BigInt),
                    (a, b) => a.or(b).or(Some(DataType::Integer)),
                };
                (Func::Mod, ty)
            }
            name if text_function(name).is_some() => {
                let (f, kinds, ty) = text_function(name).expect("checked");
                let required = kinds.bytes().filter(u8::is_ascii_uppercase).count();
                arity(required, kinds.len())?;
                let f = match f {
                    Func::ToHex { .. } => Func::ToHex {
                        bits32: !matches!(first, Some(DataType::BigInt)),
                    },
                    f => f,
                };
                for (i, (b, t)) in bound.iter().zip(&types).enumerate() {
                    let kind = kinds.as_bytes()[i].to_ascii_lowercase();
                    let want = if kind == b'i' {
                        DataType::Integer
                    } else {
                        DataType::Varchar(None)
                    };
                    let fits = match (kind, t) {
                        (_, None) => true,
                        (b'i', Some(t)) => t.is_integer(),
                        (b'b', Some(t)) => t.is_text() || *t == DataType::Bytea,
                        (_, Some(t)) => t.is_text(),
                    };
                    if !fits && !is_quoted_literal(args[i]) {
                        return Err(SqlError::UnknownFunction(signature()));
                    }
                    // A quoted literal read as an integer is read now, as PostgreSQL
                    // does: bad text is 22P02 at its place in the statement.
                    if kind == b'i'
                        && let ast::Expr::Value(v) = args[i]
                        && let ast::Value::SingleQuotedString(text) = &v.value
                        && text.trim().parse::<i64>().is_err()
                    {
                        return Err(SqlError::InvalidText(format!(
                            "invalid input syntax for type integer: \"{text}\""
                        ))
                        .at(args[i].span(), crate::error::Point::Start));
                    }
                    self.infer(b, Some(want));
                }
                (f, Some(ty))
            }
            "concat_ws" => {
                arity(2, usize::MAX)?;
                if first.is_some_and(|t| !t.is_text()) && !is_quoted_literal(args[0]) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                self.infer(&bound[0], Some(DataType::Varchar(None)));
                (Func::ConcatWs, Some(DataType::Varchar(None)))
            }
            "abs" => (Func::Abs, first),
            "lower" => (Func::Lower, Some(DataType::Varchar(None))),
            "upper" => (Func::Upper, Some(DataType::Varchar(None))),
            "length" | "char_length" | "character_length" => (Func::Length, Some(DataType::Integer)),
            "substr" | "substring" => (Func::Substring, Some(DataType::Varchar(None))),
            "coalesce" => (Func::Coalesce, types.iter().find_map(|t| *t)),
            "nullif" => (Func::NullIf, first),
            "round" => (Func::Round, first),
            "floor" => (Func::Floor, first),
            "ceil" | "ceiling" => (Func::Ceil, first),
            "concat" => (Func::Concat, Some(DataType::Varchar(None))),
            "greatest" => (Func::Greatest, types.iter().find_map(|t| *t)),
            "least" => (Func::Least, types.iter().find_map(|t| *t)),
            n if super::is_set_returning(n) => {
                return Err(SqlError::SetReturningHere(self.clause.unwrap_or("this expression")));
            }
            _ => return Err(SqlError::UnknownFunction(signature())),
        };
        match func {
            Func::Abs | Func::Lower | Func::Upper | Func::Length | Func::Floor | Func::Ceil => arity(1, 1)?,
            Func::Substring => arity(2, 3)?,
            Func::NullIf | Func::AnyEq { .. } => arity(2, 2)?,
            Func::Round => arity(1, 2)?,
            Func::Coalesce | Func::Concat | Func::Greatest | Func::Least => arity(1, usize::MAX)?,
            // (Checked above.)
            _ => {}
        }
        if matches!(func, Func::Coalesce | Func::Greatest | Func::Least | Func::NullIf) {
            for b in &bound {
                self.infer(b, ty);
            }
        }
        Ok((Expr::Func(func, bound), ty))
    }
}

impl Binder<'_> {
    /// `x AT TIME ZONE zone`: a timestamp with time zone becomes the wall-clock time in
    /// `zone` (a timestamp), a timestamp is read as a wall-clock time there (a timestamp
    /// with time zone); a date is its midnight's timestamp with time zone. A quoted literal or parameter is read as `timestamp with
    /// time zone`, as PostgreSQL does.
    pub(super) fn at_time_zone(&mut self, x: &ast::Expr, zone: &ast::Expr) -> Result<Typed> {
        use DataType as T;
        let (b, t) = self.expr(x)?;
        let (z, zt) = self.expr(zone)?;
        // (A zone is named, or an interval east of UTC: `AT TIME ZONE INTERVAL '+05:00'`.)
        if zt.is_some_and(|t| !t.is_text() && t != T::Interval) {
            return Err(SqlError::UnknownFunction(format!(
                "timezone({}, {})",
                super::type_name(zt),
                super::type_name(t)
            )));
        }
        self.infer(&z, Some(T::Varchar(None)));
        let (b, to_local) = match t {
            Some(T::TimestampTz) => (b, true),
            Some(T::Timestamp) => (b, false),
            // A date is taken as the timestamp with time zone of its midnight.
            Some(T::Date) => (Expr::Cast(b.boxed(), T::TimestampTz), true),
            None => {
                self.infer(&b, Some(T::TimestampTz));
                (b, true)
            }
            Some(t) if t.is_text() && is_quoted_literal(x) => (Expr::Cast(b.boxed(), T::TimestampTz), true),
            Some(_) => {
                return Err(SqlError::UnknownFunction(format!(
                    "timezone(unknown, {})",
                    super::type_name(t)
                )));
            }
        };
        let ty = if to_local { T::Timestamp } else { T::TimestampTz };
        Ok((Expr::Func(Func::AtTimeZone { to_local }, vec![b, z]), Some(ty)))
    }

    /// `extract(field from x)`: `date_part`'s value as a numeric.
    pub(super) fn extract(&mut self, field: &ast::DateTimeField, x: &ast::Expr) -> Result<Typed> {
        let unit = Expr::Const(Value::from(field.to_string()));
        let (b, t) = self.expr(x)?;
        let signature = || format!("extract(unknown, {})", t.map_or("unknown".into(), |t| t.sql_name()));
        let types = [Some(DataType::Varchar(None)), t];
        self.date_function(
            Func::DatePart { numeric: true },
            vec![unit, b],
            &types,
            &[x, x],
            &signature,
        )
    }

    /// `date_part(unit, x)`, `date_trunc(unit, x)` and `extract`: the unit text, `x` a date
    /// or timestamp (a quoted literal or parameter read as `timestamp with time zone`,
    /// PostgreSQL's preferred type of the kind).
    /// `make_date(y, m, d)`, `make_time(h, mi, s)`, `make_timestamp(y, m, d, h, mi, s)` and
    /// `make_timestamptz(y, m, d, h, mi, s [, zone])` (the wall-clock time read in the
    /// session zone, or in `zone`): integers, the seconds a double.
    fn make_datetime(
        &mut self,
        name: &str,
        mut bound: Vec<Expr>,
        types: &[Option<DataType>],
        signature: &dyn Fn() -> String,
    ) -> Result<Typed> {
        use DataType as T;
        let (fields, ty) = match name {
            "make_date" => (3, T::Date),
            "make_time" => (3, T::Time),
            "make_timestamp" => (6, T::Timestamp),
            _ => (6, T::TimestampTz),
        };
        let zoned = ty == T::TimestampTz && bound.len() == fields + 1;
        if bound.len() != fields && !zoned {
            return Err(SqlError::UnknownFunction(signature()));
        }
        for (i, (b, t)) in bound.iter().zip(types).enumerate().take(fields) {
            // (The seconds: a double; the rest integers.)
            let seconds = i == fields - 1 && ty != T::Date;
            match t {
                None => self.infer(b, Some(if seconds { T::Double } else { T::Integer })),
                Some(t) if t.is_integer() || (seconds && t.is_numeric()) => {}
                Some(_) => return Err(SqlError::UnknownFunction(signature())),
            }
        }
        let zone = if zoned {
            if types[fields].is_some_and(|t| !t.is_text()) {
                return Err(SqlError::UnknownFunction(signature()));
            }
            let z = bound.pop().expect("a zone");
            self.infer(&z, Some(T::Varchar(None)));
            Some(z)
        } else {
            None
        };
        let made = Expr::Func(Func::MakeDatetime(ty), bound);
        Ok(match zone {
            Some(z) => {
                let local = Expr::Func(
                    Func::MakeDatetime(T::Timestamp),
                    match made {
                        Expr::Func(_, args) => args,
                        _ => unreachable!("built above"),
                    },
                );
                (
                    Expr::Func(Func::AtTimeZone { to_local: false }, vec![local, z]),
                    Some(ty),
                )
            }
            None => (made, Some(ty)),
        })
    }

    fn date_function(
        &mut self,
        f: Func,
        mut bound: Vec<Expr>,
        types: &[Option<DataType>],
        args: &[&ast::Expr],
        signature: &dyn Fn() -> String,
    ) -> Result<Typed> {
        use DataType as T;
        if types[0].is_some_and(|t| !t.is_text()) && !is_quoted_literal(args[0]) {
            return Err(SqlError::UnknownFunction(signature()));
        }
        self.infer(&bound[0], Some(T::Varchar(None)));
        let arg = match types[1] {
            Some(t @ (T::Timestamp | T::TimestampTz | T::Date)) => t,
            Some(t @ (T::Interval | T::Time)) if matches!(f, Func::DatePart { .. }) => t,
            Some(T::Interval) => T::Interval,
            None => {
                self.infer(&bound[1], Some(T::TimestampTz));
                T::TimestampTz
            }
            Some(t) if t.is_text() && is_quoted_literal(args[1]) => {
                let x = std::mem::replace(&mut bound[1], Expr::Const(Value::Null));
                bound[1] = Expr::Cast(x.boxed(), T::TimestampTz);
                T::TimestampTz
            }
            Some(_) => return Err(SqlError::UnknownFunction(signature())),
        };
        let ty = match f {
            Func::DatePart { numeric: true } => T::Decimal { precision: 0, scale: 0 },
            Func::DatePart { numeric: false } => T::Double,
            _ if arg == T::Timestamp => T::Timestamp,
            _ if arg == T::Interval => T::Interval,
            _ => T::TimestampTz,
        };
        Ok((Expr::Func(f, bound), Some(ty)))
    }

    /// Checks the arguments of a numeric function: numbers, or quoted literals and
    /// parameters (a parameter at position `i` typed `want[i]`). With `doubles_only`, a
    /// `numeric` one is refused: PostgreSQL computes the function in `numeric`, to digits
    /// of its own.
    fn numeric_args(
        &mut self,
        bound: &[Expr],
        types: &[Option<DataType>],
        args: &[&ast::Expr],
        signature: &dyn Fn() -> String,
        doubles_only: bool,
        want: &[DataType; 2],
    ) -> Result<()> {
        for (i, ((b, t), a)) in bound.iter().zip(types).zip(args).enumerate() {
            match t {
                Some(DataType::Decimal { .. }) if doubles_only => {
                    return Err(SqlError::Unsupported(format!(
                        "{} (cast the argument to double precision: x::float8)",
                        signature()
                    )));
                }
                Some(t) if !t.is_numeric() && !is_quoted_literal(a) => {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                _ => self.infer(b, Some(want[i.min(1)])),
            }
        }
        Ok(())
    }
}

/// Whether the engine's SQL has a scalar function named `name` (the server sends a query
/// of no relation that calls a function it lacks to the catalogs' engine instead).
pub fn has_function(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    MathFunc::named(&name).is_some()
        || text_function(&name).is_some()
        || OTHER_FUNCTIONS.contains(&name.as_str())
        || super::json::JSON_FUNCTIONS.contains(&name.as_str())
        || super::sequence::SEQUENCE_FUNCTIONS.contains(&name.as_str())
        || super::array::ARRAY_FUNCTIONS.contains(&name.as_str())
        || super::inet::inet_function(&name).is_some()
}

/// The parameters of `make_interval`, in order (each 0 when not given).
const MAKE_INTERVAL: [&str; 7] = ["years", "months", "weeks", "days", "hours", "mins", "secs"];

impl Binder<'_> {
    /// `make_interval(years, months, weeks, days, hours, mins, secs)`, by position or by
    /// name (`make_interval(days => 3)`), each 0 when not given; `secs` a double, the rest
    /// integers.
    fn make_interval(&mut self, f: &ast::Function) -> Result<Typed> {
        let mut given: [Option<&ast::Expr>; 7] = [None; 7];
        let list = match &f.args {
            FunctionArguments::List(l) if l.duplicate_treatment.is_none() => &l.args[..],
            FunctionArguments::None => &[],
            _ => return unsupported("this argument form in make_interval"),
        };
        let mut named = false;
        for (i, a) in list.iter().enumerate() {
            let (slot, e) = match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) if !named && i < 7 => (i, e),
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::ExprNamed {
                    name: ast::Expr::Identifier(name),
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => {
                    named = true;
                    let n = name.value.to_lowercase();
                    let Some(slot) = MAKE_INTERVAL.iter().position(|p| *p == n) else {
                        let (_, t) = self.expr(e)?;
                        return Err(SqlError::UnknownFunction(format!(
                            "make_interval({n} => {})",
                            super::type_name(t)
                        )));
                    };
                    (slot, e)
                }
                FunctionArg::Unnamed(_) if named => {
                    return Err(SqlError::Syntax(
                        "positional argument cannot follow named argument".into(),
                    ));
                }
                _ => return Err(SqlError::UnknownFunction("make_interval(...)".into())),
            };
            if given[slot].replace(e).is_some() {
                return Err(
                    SqlError::Syntax(format!("argument name \"{}\" used more than once", MAKE_INTERVAL[slot]))
                        .at(crate::error::start_of(e), crate::error::Point::Start),
                );
            }
        }
        let mut args = Vec::with_capacity(7);
        for (slot, e) in given.iter().enumerate() {
            let want = if slot == 6 { DataType::Double } else { DataType::Integer };
            let x = match e {
                None => Expr::Const(if slot == 6 { Value::Double(0.0) } else { Value::Int(0) }),
                Some(e) => {
                    let (x, t) = self.expr(e)?;
                    match t {
                        None => Expr::Cast(x.boxed(), want),
                        Some(t) if t.is_text() && is_quoted_literal(e) => Expr::Cast(x.boxed(), want),
                        Some(DataType::SmallInt | DataType::Integer) if slot < 6 => Expr::Cast(x.boxed(), want),
                        Some(
                            DataType::SmallInt
                            | DataType::Integer
                            | DataType::BigInt
                            | DataType::Double
                            | DataType::Decimal { .. },
                        ) if slot == 6 => Expr::Cast(x.boxed(), want),
                        Some(t) => {
                            return Err(SqlError::UnknownFunction(format!(
                                "make_interval({} => {})",
                                MAKE_INTERVAL[slot],
                                t.sql_name()
                            )));
                        }
                    }
                }
            };
            args.push(x);
        }
        Ok((Expr::Func(Func::MakeInterval, args), Some(DataType::Interval)))
    }
}

/// The scalar functions `Binder::function` binds by name other than those of
/// [`text_function`] and [`MathFunc::named`] (a test checks that each of them binds).
const OTHER_FUNCTIONS: &[&str] = &[
    "now",
    "to_char",
    "format",
    "quote_ident",
    "quote_literal",
    "quote_nullable",
    "current_date",
    "pg_typeof",
    "date_part",
    "date_trunc",
    "age",
    "justify_days",
    "justify_hours",
    "justify_interval",
    "make_interval",
    "make_date",
    "make_time",
    "make_timestamp",
    "make_timestamptz",
    "timezone",
    "current_timestamp",
    "localtimestamp",
    "transaction_timestamp",
    "clock_timestamp",
    "statement_timestamp",
    "pg_advisory_unlock_all",
    "current_schema",
    "pi",
    "random",
    "gen_random_uuid",
    "sign",
    "trunc",
    "mod",
    "concat_ws",
    "abs",
    "lower",
    "upper",
    "length",
    "char_length",
    "character_length",
    "substr",
    "substring",
    "coalesce",
    "nullif",
    "round",
    "floor",
    "ceil",
    "ceiling",
    "concat",
    "greatest",
    "least",
];

/// A text function of PostgreSQL name `name`: the function, its arguments' kinds (`t`
/// text, `i` integer, `b` text or bytea; upper case where required, lower
/// where optional) and its result type.
fn text_function(name: &str) -> Option<(Func, &'static str, DataType)> {
    let text = DataType::Varchar(None);
    let text_array = DataType::Array(permafrost_types::ElemType::Text);
    Some(match name {
        "btrim" | "trim" => (Func::Trim, "Tt", text),
        "ltrim" => (Func::Ltrim, "Tt", text),
        "rtrim" => (Func::Rtrim, "Tt", text),
        "left" => (Func::Left, "TI", text),
        "right" => (Func::Right, "TI", text),
        "lpad" => (Func::Lpad, "TIt", text),
        "rpad" => (Func::Rpad, "TIt", text),
        "repeat" => (Func::Repeat, "TI", text),
        "replace" => (Func::Replace, "TTT", text),
        "reverse" => (Func::Reverse, "T", text),
        "initcap" => (Func::Initcap, "T", text),
        "translate" => (Func::Translate, "TTT", text),
        "split_part" => (Func::SplitPart, "TTI", text),
        "strpos" => (Func::Strpos, "TT", DataType::Integer),
        "starts_with" => (Func::StartsWith, "TT", DataType::Boolean),
        "chr" => (Func::Chr, "I", text),
        "ascii" => (Func::Ascii, "T", DataType::Integer),
        "to_hex" => (Func::ToHex { bits32: true }, "I", text),
        "md5" => (Func::Md5, "B", text),
        "octet_length" => (Func::OctetLength, "B", DataType::Integer),
        "regexp_replace" => (Func::Regex(RegexFn::Replace), "TTTt", text),
        "regexp_like" => (Func::Regex(RegexFn::Like), "TTt", DataType::Boolean),
        "regexp_match" => (Func::Regex(RegexFn::FirstMatch), "TTt", text_array),
        "regexp_split_to_array" => (Func::Regex(RegexFn::Split), "TTt", text_array),
        "regexp_count" => (Func::Regex(RegexFn::Count), "TTit", DataType::Integer),
        "like_escape" => (Func::Regex(RegexFn::LikeEscape), "TT", text),
        "similar_to_escape" => (Func::Regex(RegexFn::SimilarEscape), "Tt", text),
        _ => return None,
    })
}

/// A function no signature matches, as PostgreSQL names it: its argument types, a quoted
/// literal's `unknown`.
pub(super) fn signature(name: &str, args: &[&ast::Expr], types: &[Option<DataType>]) -> String {
    let shown: Vec<Option<DataType>> = args
        .iter()
        .zip(types)
        .map(|(a, t)| if is_quoted_literal(a) { None } else { *t })
        .collect();
    format!("{name}({})", argument_types(&shown))
}

/// Whether `e` is a quoted literal, whose type PostgreSQL leaves unknown until a function
/// or operator takes it.
fn is_quoted_literal(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)))
}

/// Argument types as PostgreSQL lists them where no function matches: each type's name
/// without its modifiers, `unknown` for an untyped literal or parameter.
fn argument_types(types: &[Option<DataType>]) -> String {
    types
        .iter()
        .map(|t| super::type_name(*t))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every function [`has_function`] names binds with some number of arguments (the first
    /// 2, '2' or now(), the rest 2 or '2'; the server relies on it to keep such queries
    /// away from the catalogs' engine).
    #[test]
    fn the_functions_the_engine_says_it_has_bind() {
        let catalog = crate::Catalog::new();
        let names =
            OTHER_FUNCTIONS
                .iter()
                .copied()
                .chain(["md5", "lpad", "split_part", "sqrt", "atan2", "regexp_replace"]);
        for name in names {
            assert!(has_function(name) && has_function(&name.to_ascii_uppercase()), "{name}");
            let binds = (0..7).any(|n| {
                ["2", "'2'", "now()"].iter().any(|first| {
                    ["2", "'2'"].iter().any(|rest| {
                        let args: Vec<&str> = (0..n).map(|i| if i == 0 { *first } else { *rest }).collect();
                        crate::prepare(&catalog, &format!("SELECT {name}({})", args.join(", "))).is_ok()
                    })
                })
            });
            assert!(binds, "{name} does not bind with 0 to 6 arguments");
        }
        assert!(!has_function("current_database") && !has_function("pg_get_indexdef"));
    }
}
