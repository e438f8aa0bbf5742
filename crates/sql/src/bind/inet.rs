//! Binding what takes types of their own: the network-address functions and operators
//! (`host(x)`, `x << y`, ...; expr/inet.rs), and comparisons of enum values, which compare
//! with their own type only.

use permafrost_types::DataType;
use sqlparser::ast::{self, BinaryOperator, Spanned};

use super::literal::literal_as;
use super::{Binder, Typed, type_name};
use crate::error::{Point, Result, SqlError};
use crate::expr::inet::{INET_FUNCTIONS, InetFn};
use crate::expr::{Expr, Func};

fn is_address(t: Option<DataType>) -> bool {
    matches!(t, Some(DataType::Inet | DataType::Cidr))
}

/// The address operator `op` is, if it is one.
fn address_operator(op: &BinaryOperator) -> Option<InetFn> {
    Some(match op {
        BinaryOperator::PGBitwiseShiftLeft => InetFn::Within { or_equal: false },
        BinaryOperator::PGBitwiseShiftRight => InetFn::Contains { or_equal: false },
        BinaryOperator::PGOverlap => InetFn::Overlaps,
        BinaryOperator::Custom(s) if s == "<<=" => InetFn::Within { or_equal: true },
        BinaryOperator::Custom(s) if s == ">>=" => InetFn::Contains { or_equal: true },
        _ => return None,
    })
}

/// The address function named `name`, if there is one.
pub(super) fn inet_function(name: &str) -> Option<InetFn> {
    INET_FUNCTIONS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

impl Binder<'_> {
    /// What the operands' types (`at`, `bt`) make of binary operator `op`: an address
    /// operator (`Some`), no operator at all (an enum beside another type, an address operator
    /// beside a non-address: 42883, as in PostgreSQL, at `l`), or the operator as any other
    /// binds it (`None`).
    pub(super) fn typed_operator(
        &self,
        op: &BinaryOperator,
        at: Option<DataType>,
        bt: Option<DataType>,
        l: &ast::Expr,
    ) -> Result<Option<InetFn>> {
        let no_operator = || {
            let names = format!("{} {op} {}", type_name(at), type_name(bt));
            Err(SqlError::NoOperator(names).at(l.span(), Point::After))
        };
        if let (Some(x), Some(y)) = (at, bt)
            && (matches!(x, DataType::Enum(_)) || matches!(y, DataType::Enum(_)))
            && x != y
        {
            return no_operator();
        }
        let Some(f) = address_operator(op).filter(|_| is_address(at) || is_address(bt)) else {
            return Ok(None);
        };
        if !(is_address(at) && is_address(bt)) {
            return no_operator();
        }
        Ok(Some(f))
    }

    /// `host(x)`, `masklen(x)`, `set_masklen(x, n)` ...: `x` an inet or cidr (a quoted
    /// literal or a parameter reads as inet).
    pub(super) fn inet_call(&mut self, name: &str, f: InetFn, args: &[&ast::Expr]) -> Result<Typed> {
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for &a in args {
            let (x, t) = self.expr(a)?;
            bound.push(x);
            types.push(t);
        }
        let want = if f == InetFn::SetMasklen { 2 } else { 1 };
        let signature = || {
            let shown: Vec<String> = types.iter().map(|t| type_name(*t)).collect();
            SqlError::UnknownFunction(format!("{name}({})", shown.join(", ")))
        };
        if bound.len() != want {
            return Err(signature());
        }
        let mut bound = bound.into_iter();
        let (x, t) = literal_as(bound.next().expect("one argument"), types[0], Some(DataType::Inet))?;
        self.infer(&x, Some(DataType::Inet));
        let t = t.or(self.param_type(&x));
        if !is_address(t) {
            return Err(signature());
        }
        let mut call = vec![x];
        if let Some(n) = bound.next() {
            let (n, nt) = literal_as(n, types[1], Some(DataType::Integer))?;
            self.infer(&n, Some(DataType::Integer));
            if nt.is_some_and(|t| !t.is_integer()) {
                return Err(signature());
            }
            call.push(n);
        }
        let ty = match f {
            InetFn::Host | InetFn::Text | InetFn::Abbrev => DataType::Varchar(None),
            InetFn::Masklen | InetFn::Family => DataType::Integer,
            InetFn::Network => DataType::Cidr,
            InetFn::SetMasklen => t.unwrap_or(DataType::Inet),
            _ => DataType::Inet,
        };
        Ok((Expr::Func(Func::Inet(f), call), Some(ty)))
    }
}
