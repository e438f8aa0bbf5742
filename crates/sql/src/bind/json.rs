//! Binding the json and jsonb operators (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`,
//! `?&`) and functions (`to_json[b]`, `json[b]_build_object`, `json[b]_typeof`,
//! `json[b]_array_length`); crate::expr::json evaluates them.

use permafrost_types::{DataType, Value};
use sqlparser::ast::{self, BinaryOperator, Spanned};

use super::{Binder, Typed, type_name};
use crate::error::{Point, Result, SqlError};
use crate::expr::json::{Exists, json_from};
use crate::expr::jsonb_edit::JsonEdit;
use crate::expr::{Expr, Func};

/// Whether `op` is one of the json operators.
fn is_json_op(op: &BinaryOperator) -> bool {
    use BinaryOperator as B;
    matches!(
        op,
        B::Arrow
            | B::LongArrow
            | B::HashArrow
            | B::HashLongArrow
            | B::AtArrow
            | B::ArrowAt
            | B::Question
            | B::QuestionAnd
            | B::QuestionPipe
    )
}

fn is_json(t: Option<DataType>) -> bool {
    matches!(t, Some(DataType::Json | DataType::Jsonb))
}

/// `e` (typed `t`) as a jsonb operand: a quoted literal is read as jsonb now (22P02 at
/// its place if it is not JSON), a parameter is typed jsonb.
fn as_jsonb(b: &mut Binder<'_>, e: Expr, t: Option<DataType>, at: &ast::Expr) -> Result<Typed> {
    match (&e, t) {
        (Expr::Const(Value::Text(s)), Some(DataType::Varchar(_)) | None) => {
            let v = Value::parse(&DataType::Jsonb, s)
                .map_err(|err| SqlError::from(err).at(crate::error::start_of(at), Point::Start))?;
            Ok((Expr::Const(v), Some(DataType::Jsonb)))
        }
        _ => {
            b.infer(&e, Some(DataType::Jsonb));
            Ok((e, t.or(Some(DataType::Jsonb))))
        }
    }
}

impl<'c> Binder<'c> {
    /// `e` (typed `t`) as a `text[]` operand (a path, a list of keys): a text literal read
    /// as one, a parameter typed so.
    fn text_array_operand(&mut self, e: Expr, t: Option<DataType>, signature: &dyn Fn() -> String) -> Result<Expr> {
        let text_array = DataType::Array(permafrost_types::ElemType::Text);
        match (&e, t) {
            (_, Some(DataType::Array(_))) => Ok(e),
            (Expr::Const(Value::Text(s)), _) => Ok(Expr::Const(Value::parse(&text_array, s)?)),
            (Expr::Param(_), None) => {
                self.infer(&e, Some(text_array));
                Ok(e)
            }
            _ => Err(SqlError::UnknownFunction(signature())),
        }
    }

    /// `a - b` where `a` is jsonb: a key (text), an index (integer) or keys (text[])
    /// removed.
    pub(super) fn jsonb_minus(&mut self, a: Expr, b: Expr, bt: Option<DataType>) -> Result<Typed> {
        let op = match bt {
            Some(DataType::Array(_)) => JsonEdit::DeleteKeys { many: true },
            Some(t) if t.is_integer() => JsonEdit::DeleteIndex,
            Some(t) if t.is_text() => JsonEdit::DeleteKeys { many: false },
            None => {
                self.infer(&b, Some(DataType::Varchar(None)));
                JsonEdit::DeleteKeys { many: false }
            }
            Some(t) => return Err(SqlError::NoOperator(format!("jsonb - {t}"))),
        };
        Ok((Expr::Func(Func::JsonEdit(op), vec![a, b]), Some(DataType::Jsonb)))
    }

    /// A chain `a || b || ...` of which some term is jsonb: each pair concatenated
    /// (quoted literals read as jsonb).
    pub(super) fn jsonb_concat(&mut self, terms: Vec<Typed>, at: &[&ast::Expr]) -> Result<Typed> {
        let mut out: Option<Expr> = None;
        for ((e, t), ast) in terms.into_iter().zip(at) {
            let (e, t) = as_jsonb(self, e, t, ast)?;
            if t != Some(DataType::Jsonb) {
                return Err(SqlError::NoOperator(format!("jsonb || {}", super::type_name(t))));
            }
            out = Some(match out {
                None => e,
                Some(acc) => Expr::Func(Func::JsonEdit(JsonEdit::Concat), vec![acc, e]),
            });
        }
        Ok((out.expect("a chain has terms"), Some(DataType::Jsonb)))
    }

    /// Whether `op` is one of the json operators ([`Binder::json_op`] binds them).
    pub(super) fn is_json_op(op: &BinaryOperator) -> bool {
        is_json_op(op)
    }

    /// Binds `l op r` for a json operator `op`.
    pub(super) fn json_op(&mut self, l: &ast::Expr, op: &BinaryOperator, r: &ast::Expr) -> Result<Typed> {
        use BinaryOperator as B;
        let (a, at) = self.expr(l)?;
        if let (Some(DataType::Array(_)), B::AtArrow | B::ArrowAt) = (at, op) {
            let (b, bt) = self.expr(r)?;
            let right =
                super::literal::literal_as(b, bt, at).map_err(|e| e.at(crate::error::start_of(r), Point::Start))?;
            return self.array_binary(op, (a, at), right, l);
        }
        let (a, at) = match at {
            // A quoted literal or a parameter on the left is read as jsonb.
            None | Some(DataType::Varchar(_)) if matches!(a, Expr::Const(Value::Text(_)) | Expr::Param(_)) => {
                as_jsonb(self, a, at, l)?
            }
            _ => (a, at),
        };
        let no_operator = |rt: Option<DataType>| {
            SqlError::NoOperator(format!("{} {op} {}", type_name(at), type_name(rt))).at(l.span(), Point::After)
        };
        let keys_operand = |b: &mut Binder<'_>| -> Result<Expr> { Ok(b.array_operand(r, &op.to_string())?.0) };
        let (func, ty, b) = match op {
            B::Arrow | B::LongArrow => {
                let (k, kt) = self.expr(r)?;
                if !is_json(at) {
                    return Err(no_operator(kt));
                }
                match kt {
                    Some(t) if t.is_integer() || t.is_text() => {}
                    None => self.infer(&k, Some(DataType::Varchar(None))),
                    Some(t) => return Err(no_operator(Some(t))),
                }
                let text = *op == B::LongArrow;
                let ty = if text { Some(DataType::Varchar(None)) } else { at };
                (Func::JsonGet { text }, ty, k)
            }
            B::HashArrow | B::HashLongArrow => {
                if !is_json(at) {
                    return Err(no_operator(None));
                }
                let text = *op == B::HashLongArrow;
                let ty = if text { Some(DataType::Varchar(None)) } else { at };
                (Func::JsonPath { text }, ty, keys_operand(self)?)
            }
            B::AtArrow | B::ArrowAt => {
                let (c, ct) = self.expr(r)?;
                let (c, ct) = as_jsonb(self, c, ct, r)?;
                if at != Some(DataType::Jsonb) || ct != Some(DataType::Jsonb) {
                    return Err(no_operator(ct));
                }
                let (x, y) = if *op == B::AtArrow { (a, c) } else { (c, a) };
                return Ok((Expr::Func(Func::JsonContains, vec![x, y]), Some(DataType::Boolean)));
            }
            B::Question => {
                let (k, kt) = self.expr(r)?;
                if at != Some(DataType::Jsonb) || !kt.is_none_or(|t| t.is_text()) {
                    return Err(no_operator(kt));
                }
                self.infer(&k, Some(DataType::Varchar(None)));
                (Func::JsonExists(Exists::One), Some(DataType::Boolean), k)
            }
            _ => {
                if at != Some(DataType::Jsonb) {
                    return Err(no_operator(None));
                }
                let mode = if *op == B::QuestionPipe {
                    Exists::Any
                } else {
                    Exists::All
                };
                (Func::JsonExists(mode), Some(DataType::Boolean), keys_operand(self)?)
            }
        };
        Ok((Expr::Func(func, vec![a, b]), ty))
    }

    /// A whole-row reference made a JSON object, as `row_to_json(t)` and `json_agg(t)`
    /// write one (`{"id":1,"v":"x"}`): `e` names a relation of the query and no column;
    /// `None` for any other expression.
    pub(super) fn whole_row(&mut self, e: &ast::Expr) -> Result<Option<Expr>> {
        let ast::Expr::Identifier(id) = e else {
            return Ok(None);
        };
        let name = super::ident(id);
        if super::find_column(&self.rels, None, &name, &[]).is_ok_and(|c| c.is_some()) {
            return Ok(None);
        }
        let Some(rel) = self.rels.iter().find(|r| r.alias == name) else {
            return Ok(None);
        };
        let columns: Vec<String> = rel.schema.columns.iter().map(|c| c.name.clone()).collect();
        let mut args = Vec::with_capacity(2 * columns.len());
        for column in columns {
            let reference = ast::Expr::CompoundIdentifier(vec![
                ast::Ident::with_quote('"', name.clone()),
                ast::Ident::with_quote('"', column.clone()),
            ]);
            let (x, t) = self.expr(&reference)?;
            args.push(Expr::Const(Value::text(column)));
            let from = json_from(t);
            args.push(Expr::Func(Func::ToJson { from, jsonb: false }, vec![x]));
        }
        let f = Func::JsonBuildObject {
            jsonb: false,
            compact: true,
        };
        Ok(Some(Expr::Func(f, args)))
    }

    /// Binds a json function call `name(args)`, the arguments bound (`bound`, typed
    /// `types`); `None` when `name` is none of them.
    pub(super) fn json_function(
        &mut self,
        name: &str,
        bound: Vec<Expr>,
        types: &[Option<DataType>],
        signature: &dyn Fn() -> String,
    ) -> Result<Option<Typed>> {
        let jsonb = name.starts_with("jsonb") || name == "to_jsonb";
        let doc_type = Some(if jsonb { DataType::Jsonb } else { DataType::Json });
        let to_json = |e: Expr, t: Option<DataType>| {
            Expr::Func(
                Func::ToJson {
                    from: json_from(t),
                    jsonb,
                },
                vec![e],
            )
        };
        Ok(Some(match name {
            "to_json" | "to_jsonb" => {
                let [e] = <[Expr; 1]>::try_from(bound).map_err(|_| SqlError::UnknownFunction(signature()))?;
                (to_json(e, types[0]), doc_type)
            }
            "json_build_object" | "jsonb_build_object" => {
                if !bound.len().is_multiple_of(2) {
                    return Err(SqlError::InvalidArgument(
                        "argument list must have even number of elements".into(),
                    ));
                }
                let args = bound
                    .into_iter()
                    .zip(types)
                    .enumerate()
                    .map(|(i, (e, t))| if i % 2 == 0 { e } else { to_json(e, *t) })
                    .collect();
                let f = Func::JsonBuildObject { jsonb, compact: false };
                (Expr::Func(f, args), doc_type)
            }
            "json_build_array" | "jsonb_build_array" => {
                let args = bound.into_iter().zip(types).map(|(e, t)| to_json(e, *t)).collect();
                let f = Func::JsonEdit(JsonEdit::BuildArray { jsonb });
                (Expr::Func(f, args), doc_type)
            }
            "jsonb_set" => {
                if !(3..=4).contains(&bound.len()) {
                    return Err(SqlError::UnknownFunction(signature()));
                }
                let mut args = Vec::with_capacity(bound.len());
                let null = ast::Expr::value(ast::Value::Null);
                for (i, (e, t)) in bound.into_iter().zip(types).enumerate() {
                    args.push(match i {
                        0 | 2 => {
                            let (e, t) = as_jsonb(self, e, *t, &null)?;
                            if t != Some(DataType::Jsonb) {
                                return Err(SqlError::UnknownFunction(signature()));
                            }
                            e
                        }
                        1 => self.text_array_operand(e, *t, &signature)?,
                        _ => {
                            self.infer(&e, Some(DataType::Boolean));
                            e
                        }
                    });
                }
                (Expr::Func(Func::JsonEdit(JsonEdit::Set), args), Some(DataType::Jsonb))
            }
            "json_typeof" | "jsonb_typeof" | "json_array_length" | "jsonb_array_length" => {
                let [e] = <[Expr; 1]>::try_from(bound).map_err(|_| SqlError::UnknownFunction(signature()))?;
                let (e, t) = match types[0] {
                    t if is_json(t) => (e, t),
                    None | Some(DataType::Varchar(_)) if matches!(e, Expr::Const(_) | Expr::Param(_)) => {
                        let ast = ast::Expr::value(ast::Value::Null);
                        let (e, t) = as_jsonb(self, e, types[0], &ast)?;
                        (e, t)
                    }
                    _ => return Err(SqlError::UnknownFunction(signature())),
                };
                let _ = t;
                let (func, ty) = if name.ends_with("typeof") {
                    (Func::JsonTypeof, DataType::Varchar(None))
                } else {
                    (Func::JsonArrayLength, DataType::Integer)
                };
                (Expr::Func(func, vec![e]), Some(ty))
            }
            _ => return Ok(None),
        }))
    }
}

/// The json functions [`Binder::json_function`] binds.
pub(super) const JSON_FUNCTIONS: &[&str] = &[
    "to_json",
    "to_jsonb",
    "json_build_array",
    "jsonb_build_array",
    "jsonb_set",
    "json_build_object",
    "jsonb_build_object",
    "json_typeof",
    "jsonb_typeof",
    "json_array_length",
    "jsonb_array_length",
];
