//! A set-returning function in the select list (`SELECT generate_series(1, 3)`,
//! `SELECT id, generate_series(1, n) FROM t`): each row of the query gives one row per
//! value of the function, the row left out when it gives none — the rows of the function
//! called in FROM after the query's items, reading them (LATERAL). So the query is planned
//! as that one: the call becomes a read of the function's column, and the function an
//! item of FROM. Taken for one such call that is not inside a subquery of the select
//! list, in a query without aggregation or window calls (PostgreSQL then runs the function
//! over the grouped rows); refused (0A000) otherwise.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Visit, VisitMut, Visitor, VisitorMut};

use crate::bind::is_set_returning;
use crate::error::{Result, SqlError, unsupported};

/// The name of the FROM item a set-returning call of the select list becomes.
const ALIAS: &str = "__select_list_srf";

/// `s` with its select list's set-returning call made an item of FROM, or `None` when its
/// select list has none.
pub(super) fn lift(s: &ast::Select) -> Result<Option<ast::Select>> {
    // (Looked for first: a query without one is not copied.)
    let mut any = Any { depth: 0 };
    let found = s.projection.iter().any(|item| match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            e.visit(&mut any).is_break()
        }
        _ => false,
    });
    if !found {
        return Ok(None);
    }
    let mut s = s.clone();
    let mut v = Calls {
        depth: 0,
        found: Vec::new(),
    };
    for item in &mut s.projection {
        let e = match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let _ = e.visit(&mut v);
    }
    let (call, column) = match v.found.len() {
        0 => return Ok(None),
        1 => v.found.pop().expect("one"),
        _ => return unsupported("more than one set-returning function call in a select list"),
    };
    if call.over.is_some() || call.filter.is_some() {
        return unsupported("a set-returning function with OVER or FILTER");
    }
    let ast::FunctionArguments::List(list) = &call.args else {
        return unsupported("this argument form of a set-returning function");
    };
    // (UNNEST is a keyword of FROM that must have its arguments: a NULL stands for them.)
    let ast::Statement::Query(q) =
        crate::parse::parse_statement(&format!("SELECT 1 FROM {}(NULL) AS {ALIAS} (\"{column}\")", call.name))?
    else {
        return unsupported("this set-returning function");
    };
    let ast::SetExpr::Select(item) = *q.body else {
        return unsupported("this set-returning function");
    };
    let mut item = item
        .from
        .into_iter()
        .next()
        .ok_or_else(|| SqlError::Syntax(column.clone()))?;
    match &mut item.relation {
        ast::TableFactor::Table { args, .. } => {
            *args = Some(ast::TableFunctionArgs {
                args: list.args.clone(),
                settings: None,
            });
        }
        ast::TableFactor::UNNEST { array_exprs, .. } => {
            *array_exprs = list
                .args
                .iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                    _ => unsupported("this argument form of unnest"),
                })
                .collect::<Result<_>>()?;
        }
        _ => {}
    }
    s.from.push(item);
    Ok(Some(s))
}

/// Whether an expression holds a set-returning call (not inside its subqueries): the
/// visit breaks at the first.
struct Any {
    depth: usize,
}

impl Visitor for Any {
    type Break = ();

    fn pre_visit_query(&mut self, _q: &ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
        match e {
            ast::Expr::Function(f) if self.depth == 0 && is_set_returning(&f.name.to_string().to_lowercase()) => {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

/// Finds the set-returning calls of an expression (not inside its subqueries), each
/// replaced by a read of the column of the FROM item it becomes.
struct Calls {
    /// How many subqueries deep the visit is.
    depth: usize,
    /// Each call, and the name of its column.
    found: Vec<(ast::Function, String)>,
}

impl VisitorMut for Calls {
    type Break = ();

    fn pre_visit_query(&mut self, _q: &mut ast::Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut ast::Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        if let ast::Expr::Function(f) = e
            && is_set_returning(&f.name.to_string().to_lowercase())
        {
            let f = f.clone();
            let name = f.name.to_string().to_lowercase();
            let column = name.rsplit('.').next().unwrap_or(&name).to_string();
            *e = ast::Expr::CompoundIdentifier(vec![
                ast::Ident::with_quote('"', ALIAS),
                ast::Ident::with_quote('"', column.clone()),
            ]);
            self.found.push((f, column));
        }
        ControlFlow::Continue(())
    }
}
