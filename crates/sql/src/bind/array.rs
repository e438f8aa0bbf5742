//! Arrays in expressions: `ARRAY[...]`, subscripts and slices, the array functions and
//! operators (evaluated by expr/array.rs), and array operands (the right side of
//! `x op ANY(...)` and `x op ALL(...)`, the arguments of `unnest(...)`). An array value is its literal's text
//! (`permafrost_types::array`) typed `DataType::Array`; an operand may also be a parameter
//! or a string constant cast to an array type (casts nested as client-side binding writes
//! them, `('{1,2}'::int2[])::integer[]`, are read by their outermost).

use permafrost_types::{DataType, ElemType, Value};
use sqlparser::ast;

use super::literal::map_type;
use super::{Binder, Typed};
use crate::error::{Point, Result, SqlError, unsupported};
use crate::expr::array::ArrayFn;
use crate::expr::{CmpOp, Expr, Func};

/// `e` without its parentheses and its casts to array types, and the element type the
/// outermost of those casts names (`None` without one, or for `::anyarray`-like `[]`).
fn strip_array_casts(e: &ast::Expr) -> Result<(&ast::Expr, Option<DataType>)> {
    let mut e = e;
    let mut elem = None;
    let mut outermost = true;
    loop {
        match e {
            ast::Expr::Nested(inner) => e = inner,
            ast::Expr::Cast {
                expr,
                data_type: ast::DataType::Array(def),
                format: None,
                ..
            } => {
                if outermost {
                    elem = match def {
                        ast::ArrayElemTypeDef::SquareBracket(t, _)
                        | ast::ArrayElemTypeDef::AngleBracket(t)
                        | ast::ArrayElemTypeDef::Parenthesis(t)
                        | ast::ArrayElemTypeDef::Qualified(t, _) => Some(map_type(t)?),
                        ast::ArrayElemTypeDef::None => None,
                    };
                    outermost = false;
                }
                e = expr;
            }
            other => return Ok((other, elem)),
        }
    }
}

impl<'c> Binder<'c> {
    /// Binds `x = ANY(array)` (`negated`: `x <> ALL(array)`). `ARRAY[a, b]` is an IN list;
    /// any other array is a literal's text (a parameter, a string constant, either cast to
    /// an array type), its elements read as the type of `x`.
    pub(super) fn any_op(&mut self, left: &ast::Expr, right: &ast::Expr, negated: bool) -> Result<Typed> {
        if let (ast::Expr::Array(arr), _) = Self::array_without_casts(right)? {
            return self.in_list(left, &arr.elem, negated);
        }
        let (x, a, elem) = self.compared_with_array(left, right)?;
        Ok((
            Expr::Func(Func::AnyEq { elem, negated }, vec![x, a]),
            Some(DataType::Boolean),
        ))
    }

    /// Binds `x op ANY(array)` (`all`: `x op ALL(array)`) for the comparison operators
    /// other than `= ANY` and `<> ALL` (`any_op`), the array as there.
    pub(super) fn cmp_array(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        all: bool,
    ) -> Result<Typed> {
        use ast::BinaryOperator as B;
        let op = match op {
            B::Eq => CmpOp::Eq,
            B::NotEq => CmpOp::NotEq,
            B::Lt => CmpOp::Lt,
            B::LtEq => CmpOp::LtEq,
            B::Gt => CmpOp::Gt,
            B::GtEq => CmpOp::GtEq,
            other => return unsupported(format!("{other} with ANY or ALL (comparison operators are)")),
        };
        let (x, a, elem) = self.compared_with_array(left, right)?;
        Ok((
            Expr::Func(Func::AnyCmp { elem, op, all }, vec![x, a]),
            Some(DataType::Boolean),
        ))
    }

    /// The operands of `x op ANY/ALL (array)`: `x`, the array (a literal's text, a
    /// parameter, a string constant, either cast to an array type), and the type its
    /// elements are read as (the type of `x`, else the array's).
    fn compared_with_array(&mut self, left: &ast::Expr, right: &ast::Expr) -> Result<(Expr, Expr, Option<DataType>)> {
        let (inner, cast_elem) = Self::array_without_casts(right)?;
        let (x, xt) = self.expr(left)?;
        let (a, at) = self.expr(inner)?;
        let cast_elem = match at {
            Some(DataType::Array(e)) => cast_elem.or(Some(e.data_type())),
            _ => cast_elem,
        };
        if cast_elem.is_some() {
            self.infer(&x, cast_elem);
        }
        let elem = xt.or(self.param_type(&x)).or(cast_elem);
        self.array_use(&a, at, elem, "op ANY/ALL (array) requires array on right side")?;
        Ok((x, a, elem))
    }

    /// An array operand without its casts ([`strip_array_casts`]).
    pub(super) fn array_without_casts(e: &ast::Expr) -> Result<(&ast::Expr, Option<DataType>)> {
        strip_array_casts(e)
    }

    /// Records that the bound operand `a` (typed `at`) is used as an array whose elements
    /// are read as `elem`: a parameter becomes an array parameter; text is an array
    /// literal; anything else is not an array (42804, `what` naming the use).
    pub(super) fn array_use(
        &mut self,
        a: &Expr,
        at: Option<DataType>,
        elem: Option<DataType>,
        what: &str,
    ) -> Result<()> {
        match a {
            Expr::Param(i) => {
                if self.params[*i].is_some() {
                    return Err(SqlError::Type(format!(
                        "parameter ${} is used both as an array and as a value",
                        i + 1
                    )));
                }
                self.array_params.retain(|(p, _)| p != i);
                self.array_params.push((*i, elem));
                Ok(())
            }
            _ if matches!(at, None | Some(DataType::Varchar(_)) | Some(DataType::Array(_))) => Ok(()),
            _ => Err(SqlError::Type(what.to_string())),
        }
    }

    /// Binds an array operand of a function (`unnest`, `= ANY`): the array, and the type
    /// of its elements (`None` when nothing names it: they stay text).
    pub(crate) fn array_operand(&mut self, e: &ast::Expr, function: &str) -> Result<(Expr, Option<DataType>)> {
        let (inner, cast_elem) = strip_array_casts(e)?;
        if let ast::Expr::Array(arr) = inner {
            return self.array_constructor(arr, cast_elem);
        }
        let (a, at) = self.expr(inner)?;
        if let Some(DataType::Array(elem)) = at {
            return Ok((a, Some(cast_elem.unwrap_or(elem.data_type()))));
        }
        if !matches!(a, Expr::Param(_)) && at.is_some_and(|t| !t.is_text()) {
            return Err(SqlError::UnknownFunction(format!(
                "{function}({})",
                super::type_name(at)
            )));
        }
        self.array_use(&a, at, cast_elem, "")?;
        // A constant's elements are read now, as PostgreSQL reads an array literal when the
        // statement is planned: a bad one is an error at its place.
        if let (Expr::Const(Value::Text(text)), Some(elem)) = (&a, cast_elem) {
            let place = crate::error::start_of(inner);
            for item in crate::array::elements(text)
                .map_err(|e| e.at(place, Point::Start))?
                .into_iter()
                .flatten()
            {
                Value::parse(&elem, &item).map_err(|e| SqlError::from(e).at(place, Point::Start))?;
            }
        }
        Ok((a, cast_elem))
    }

    /// Binds `ARRAY[a, b, ...]`: its elements made values of `cast_elem` (the type of a cast
    /// around it) or of their common type; that type is given back.
    pub(super) fn array_constructor(
        &mut self,
        arr: &ast::Array,
        cast_elem: Option<DataType>,
    ) -> Result<(Expr, Option<DataType>)> {
        let mut items = Vec::with_capacity(arr.elem.len());
        let mut elem = cast_elem;
        for item in &arr.elem {
            let (x, xt) = self.expr(item)?;
            if matches!(xt, Some(DataType::Array(_))) || matches!(item, ast::Expr::Array(_)) {
                return unsupported("multidimensional arrays (arrays here have one dimension)");
            }
            elem = match (elem, xt) {
                (None, t) => t,
                (Some(e), Some(t)) if cast_elem.is_none() => Some(super::literal::common_type(e, t)?),
                (e, _) => e,
            };
            items.push(x);
        }
        for x in &items {
            self.infer(x, elem);
        }
        let elem_type = elem.and_then(ElemType::of);
        Ok((Expr::Func(Func::ArrayOf { elem: elem_type }, items), elem))
    }

    /// Binds `ARRAY[a, b, ...]` as a value: an array of its elements' type (text when
    /// nothing names one).
    pub(super) fn array_value(&mut self, arr: &ast::Array, cast_elem: Option<DataType>) -> Result<Typed> {
        let (x, elem) = self.array_constructor(arr, cast_elem)?;
        let ty = array_of(elem.unwrap_or(DataType::Varchar(None)), "multidimensional arrays")?;
        Ok((x, Some(ty)))
    }

    /// Binds `a[i]` and `a[lo:hi]` (one subscript: arrays here have one dimension).
    pub(super) fn subscript(&mut self, root: &ast::Expr, chain: &[ast::AccessExpr]) -> Result<Typed> {
        let [ast::AccessExpr::Subscript(sub)] = chain else {
            return unsupported("field access and more than one subscript (arrays here have one dimension)");
        };
        let (a, at) = self.expr(root)?;
        let Some(DataType::Array(elem)) = at else {
            return Err(SqlError::Type(format!(
                "cannot subscript type {} because it does not support subscripting",
                super::type_name(at)
            ))
            .at(crate::error::start_of(root), Point::Start));
        };
        let index = |b: &mut Self, e: &ast::Expr| -> Result<Expr> {
            let (i, it) = b.expr(e)?;
            b.infer(&i, Some(DataType::Integer));
            match it {
                None => Ok(i),
                Some(t) if t.is_integer() => Ok(i),
                Some(t) if t.is_text() => Ok(Expr::Cast(i.boxed(), DataType::Integer)),
                Some(t) => Err(SqlError::Type(format!(
                    "array subscript must have type integer, not type {t}"
                ))),
            }
        };
        Ok(match sub {
            ast::Subscript::Index { index: i } => {
                let i = index(self, i)?;
                let f = Func::Array {
                    f: ArrayFn::Subscript,
                    elem,
                };
                (Expr::Func(f, vec![a, i]), Some(elem.data_type()))
            }
            ast::Subscript::Slice {
                lower_bound,
                upper_bound,
                stride: None,
            } => {
                let mut args = vec![a];
                for b in [lower_bound, upper_bound].into_iter().flatten() {
                    args.push(index(self, b)?);
                }
                let f = ArrayFn::Slice {
                    lower: lower_bound.is_some(),
                    upper: upper_bound.is_some(),
                };
                (Expr::Func(Func::Array { f, elem }, args), at)
            }
            ast::Subscript::Slice { .. } => return unsupported("a slice with a stride"),
        })
    }

    /// Binds `a op b` where either side is an array: comparison, `@>`, `<@`, `&&`, `||`.
    pub(super) fn array_binary(
        &mut self,
        op: &ast::BinaryOperator,
        (a, at): Typed,
        (b, bt): Typed,
        at_op: &ast::Expr,
    ) -> Result<Typed> {
        use ast::BinaryOperator as B;
        let no_operator = || {
            SqlError::NoOperator(format!("{} {op} {}", super::type_name(at), super::type_name(bt)))
                .at(sqlparser::ast::Spanned::span(at_op), Point::After)
        };
        // `array || element` and `element || array` append and prepend.
        if *op == B::StringConcat {
            return self.array_concat(vec![(a, at), (b, bt)]);
        }
        let elem = match (at, bt) {
            // (As PostgreSQL, arrays of different types do not compare: int[] = numeric[]
            // is no operator; text and varchar elements are the same.)
            (Some(DataType::Array(x)), Some(DataType::Array(y))) if x == y => x,
            (Some(DataType::Array(x)), Some(DataType::Array(y)))
                if x.data_type().is_text() && y.data_type().is_text() =>
            {
                ElemType::Text
            }
            (Some(DataType::Array(x)), None) | (None, Some(DataType::Array(x))) => x,
            _ => return Err(no_operator()),
        };
        self.infer(&a, Some(DataType::Array(elem)));
        self.infer(&b, Some(DataType::Array(elem)));
        let f = match op {
            B::Eq => ArrayFn::Cmp(CmpOp::Eq),
            B::NotEq => ArrayFn::Cmp(CmpOp::NotEq),
            B::Lt => ArrayFn::Cmp(CmpOp::Lt),
            B::LtEq => ArrayFn::Cmp(CmpOp::LtEq),
            B::Gt => ArrayFn::Cmp(CmpOp::Gt),
            B::GtEq => ArrayFn::Cmp(CmpOp::GtEq),
            B::AtArrow => ArrayFn::Contains,
            B::ArrowAt => ArrayFn::ContainedBy,
            B::PGOverlap => ArrayFn::Overlaps,
            _ => return Err(no_operator()),
        };
        Ok((Expr::Func(Func::Array { f, elem }, vec![a, b]), Some(DataType::Boolean)))
    }

    /// Binds a chain `x || y || ...` of which some term is an array: arrays concatenated,
    /// other terms appended or prepended as elements.
    pub(super) fn array_concat(&mut self, terms: Vec<Typed>) -> Result<Typed> {
        let Some(elem) = terms.iter().find_map(|(_, t)| match t {
            Some(DataType::Array(e)) => Some(*e),
            _ => None,
        }) else {
            return Err(SqlError::Type("|| of arrays needs an array".into()));
        };
        let mut terms = terms.into_iter();
        let (mut acc, mut acc_t) = terms.next().expect("a chain has terms");
        for (x, xt) in terms {
            let f = match (acc_t, xt) {
                (Some(DataType::Array(_)), Some(DataType::Array(_))) => ArrayFn::Cat,
                (Some(DataType::Array(_)), _) => ArrayFn::Append,
                (_, Some(DataType::Array(_))) => ArrayFn::Prepend,
                _ => ArrayFn::Cat,
            };
            self.infer(&x, Some(elem.data_type()));
            acc = Expr::Func(Func::Array { f, elem }, vec![acc, x]);
            acc_t = Some(DataType::Array(elem));
        }
        Ok((acc, acc_t))
    }

    /// Binds a call of an array function ([`ARRAY_FUNCTIONS`]), its arguments bound.
    pub(super) fn array_function(
        &mut self,
        name: &str,
        mut args: Vec<Expr>,
        types: &[Option<DataType>],
        signature: &dyn Fn() -> String,
    ) -> Result<Typed> {
        let wrong = || SqlError::UnknownFunction(signature());
        let n = args.len();
        let text = Some(DataType::Varchar(None));
        if name == "string_to_array" {
            if !(2..=3).contains(&n) || types.iter().any(|t| t.is_some_and(|t| !t.is_text())) {
                return Err(wrong());
            }
            for a in &args {
                self.infer(a, text);
            }
            let f = Func::Array {
                f: ArrayFn::FromString,
                elem: ElemType::Text,
            };
            return Ok((Expr::Func(f, args), Some(DataType::Array(ElemType::Text))));
        }
        // Which arguments are arrays, which elements, which integers.
        let (shape, f): (&[u8], ArrayFn) = match name {
            "array_length" => (b"ai", ArrayFn::Length),
            "array_lower" => (b"ai", ArrayFn::LowerBound),
            "array_upper" => (b"ai", ArrayFn::UpperBound),
            "cardinality" => (b"a", ArrayFn::Cardinality),
            "array_ndims" => (b"a", ArrayFn::Ndims),
            "array_dims" => (b"a", ArrayFn::Dims),
            "array_to_string" if n == 3 => (b"att", ArrayFn::ToString),
            "array_to_string" => (b"at", ArrayFn::ToString),
            "array_append" => (b"ae", ArrayFn::Append),
            "array_prepend" => (b"ea", ArrayFn::Prepend),
            "array_cat" => (b"aa", ArrayFn::Cat),
            "array_position" if n == 3 => (b"aei", ArrayFn::Position),
            "array_position" => (b"ae", ArrayFn::Position),
            "array_positions" => (b"ae", ArrayFn::Positions),
            "array_remove" => (b"ae", ArrayFn::Remove),
            "array_replace" => (b"aee", ArrayFn::Replace),
            _ => return Err(wrong()),
        };
        if shape.len() != n {
            return Err(wrong());
        }
        // The element type: an array argument's, else an element argument's.
        let from_array = shape.iter().zip(types).find_map(|(k, t)| match (k, t) {
            (b'a', Some(DataType::Array(e))) => Some(*e),
            _ => None,
        });
        let from_elem = shape.iter().zip(types).find_map(|(k, t)| match (k, t) {
            (b'e', Some(t)) => ElemType::of(*t),
            _ => None,
        });
        let elem = from_array.or(from_elem).ok_or_else(wrong)?;
        for (i, k) in shape.iter().enumerate() {
            let t = types[i];
            match k {
                b'a' => match t {
                    Some(DataType::Array(_)) => {}
                    None if !matches!(args[i], Expr::Param(_)) => {}
                    None => self.infer(&args[i], Some(DataType::Array(elem))),
                    Some(t) if t.is_text() && matches!(args[i], Expr::Const(_)) => {
                        let x = std::mem::replace(&mut args[i], Expr::Const(Value::Null));
                        args[i] = Expr::Cast(x.boxed(), DataType::Array(elem));
                    }
                    Some(_) => return Err(wrong()),
                },
                b'e' => self.infer(&args[i], Some(elem.data_type())),
                b'i' => {
                    self.infer(&args[i], Some(DataType::Integer));
                    if t.is_some_and(|t| !t.is_integer()) {
                        return Err(wrong());
                    }
                }
                _ => {
                    self.infer(&args[i], text);
                    if t.is_some_and(|t| !t.is_text()) {
                        return Err(wrong());
                    }
                }
            }
        }
        let ty = match f {
            ArrayFn::Dims | ArrayFn::ToString => text,
            ArrayFn::Append | ArrayFn::Prepend | ArrayFn::Cat | ArrayFn::Remove | ArrayFn::Replace => {
                Some(DataType::Array(elem))
            }
            ArrayFn::Positions => Some(DataType::Array(ElemType::Integer)),
            _ => Some(DataType::Integer),
        };
        Ok((Expr::Func(Func::Array { f, elem }, args), ty))
    }
}

/// The array functions [`Binder::array_function`] binds.
pub(super) const ARRAY_FUNCTIONS: &[&str] = &[
    "array_length",
    "array_lower",
    "array_upper",
    "cardinality",
    "array_ndims",
    "array_dims",
    "array_to_string",
    "array_append",
    "array_prepend",
    "array_cat",
    "array_position",
    "array_positions",
    "array_remove",
    "array_replace",
    "string_to_array",
];

/// The type of arrays of `elem`; `what` names the refusal where `elem` is an array itself
/// (arrays here have one dimension). Arrays of enums and of addresses are not kept either.
pub(super) fn array_of(elem: DataType, what: &str) -> Result<DataType> {
    match (ElemType::of(elem), elem) {
        (Some(e), _) => Ok(DataType::Array(e)),
        (None, DataType::Array(_)) => Err(SqlError::Unsupported(what.into())),
        (None, other) => Err(SqlError::Unsupported(format!(
            "arrays of type {} (cast the values to text)",
            other.sql_name()
        ))),
    }
}
