//! Ownership and privileges, which this server does not keep: any user name connects, and
//! every client may read, write and change every object. A statement that gives what every
//! client already holds is accepted once the objects it names are found (pg_dump writes
//! them after each object): `ALTER {TABLE | VIEW | SEQUENCE | TYPE} [IF EXISTS] [ONLY] name
//! OWNER TO role` and `GRANT privileges ON {[TABLE] names | SEQUENCE names | SCHEMA public |
//! ALL {TABLES | SEQUENCES} IN SCHEMA public} TO roles`. One that would take something
//! away (REVOKE) is refused (0A000): it could not hold.

use sqlparser::ast::{self, GrantObjects};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, unsupported};
use crate::script::Cursor;

/// `ALTER {TABLE | VIEW | SEQUENCE | TYPE} [IF EXISTS] [ONLY] name OWNER TO role` (no IF
/// EXISTS for a type, as in PostgreSQL): its command tag once the object is found, with
/// the NOTICE of `IF EXISTS` when it is not (`None` when `sql` is not such a statement).
pub fn owner_to(catalog: &Catalog, sql: &str) -> Option<Result<(&'static str, Option<String>)>> {
    let mut c = Cursor::new(sql).ok()?;
    if !c.keyword("ALTER") {
        return None;
    }
    let (tag, kind) = ["TABLE", "VIEW", "SEQUENCE", "TYPE"]
        .into_iter()
        .zip(["ALTER TABLE", "ALTER VIEW", "ALTER SEQUENCE", "ALTER TYPE"])
        .find(|(k, _)| c.keyword(k))
        .map(|(k, tag)| (tag, k))?;
    let if_exists = kind != "TYPE" && c.if_exists().ok()?;
    c.keyword("ONLY");
    let at = c.pos;
    c.parts().ok()?;
    if !(c.keyword("OWNER") && c.keyword("TO")) {
        return None;
    }
    let role_ok = c.ident().is_ok() && c.peek().is_none();
    c.pos = at;
    Some(if role_ok {
        c.relation()
            .and_then(|name| found(catalog, kind, &name, if_exists))
            .map(|notice| (tag, notice))
    } else {
        Err(SqlError::Syntax(format!(
            "syntax error: {} OWNER TO takes one role name",
            tag
        )))
    })
}

/// Whether object `name` of kind `kind` exists: an error saying it does not, or with
/// `if_exists` the NOTICE that says so.
fn found(catalog: &Catalog, kind: &str, name: &str, if_exists: bool) -> Result<Option<String>> {
    let exists = match kind {
        // ALTER TABLE also takes a view or a sequence, as in PostgreSQL.
        "TABLE" => catalog.has_relation(name),
        "VIEW" => catalog.view(name).is_some(),
        "SEQUENCE" => crate::sequence_alter::exists(catalog, name),
        _ => catalog.enum_type(name).is_some(),
    };
    match (exists, kind) {
        (true, _) => Ok(None),
        (false, _) if if_exists => Ok(Some(format!("relation \"{name}\" does not exist, skipping"))),
        (false, "TYPE") => Err(SqlError::UnknownType(name.to_string())),
        (false, "SEQUENCE") => Err(SqlError::UnknownSequence(name.to_string())),
        (false, "VIEW") => Err(SqlError::UnknownView(name.to_string())),
        (false, _) => Err(SqlError::UnknownTable(name.to_string())),
    }
}

/// `GRANT ... ON objects TO roles`: accepted once its objects are found (see the module's
/// documentation).
pub fn grant(catalog: &Catalog, g: &ast::Grant) -> Result<()> {
    let public = |schemas: &[ast::ObjectName]| -> Result<()> {
        for s in schemas {
            let name = crate::bind::name_parts(s)?.join(".");
            if name != "public" {
                return Err(SqlError::UnknownSchema(name));
            }
        }
        Ok(())
    };
    match &g.objects {
        Some(GrantObjects::Tables(names)) => {
            for n in names {
                found(catalog, "TABLE", &crate::bind::object_name(n)?, false)?;
            }
            Ok(())
        }
        Some(GrantObjects::Sequences(names)) => {
            for n in names {
                found(catalog, "SEQUENCE", &crate::bind::object_name(n)?, false)?;
            }
            Ok(())
        }
        Some(
            GrantObjects::Schemas(schemas)
            | GrantObjects::AllTablesInSchema { schemas }
            | GrantObjects::AllSequencesInSchema { schemas },
        ) => public(schemas),
        _ => unsupported(format!(
            "{g} (GRANT on tables, sequences and the schema public is accepted: every client holds every privilege)"
        )),
    }
}

/// What `REVOKE` is answered: refused, since every client keeps every privilege.
pub fn revoke() -> SqlError {
    SqlError::Unsupported("REVOKE (privileges are not kept: every client may read and change every object)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_to_is_recognised_only_as_the_whole_statement() {
        let catalog = Catalog::new();
        assert!(owner_to(&catalog, "ALTER TABLE t ADD COLUMN x int").is_none());
        assert!(owner_to(&catalog, "SELECT 1").is_none());
        assert!(matches!(
            owner_to(&catalog, "ALTER TABLE ONLY public.t OWNER TO postgres"),
            Some(Err(SqlError::UnknownTable(t))) if t == "t"
        ));
        assert!(matches!(
            owner_to(&catalog, "ALTER TABLE IF EXISTS t OWNER TO postgres"),
            Some(Ok(("ALTER TABLE", Some(_))))
        ));
        assert!(matches!(
            owner_to(&catalog, "ALTER TYPE mood OWNER TO x y"),
            Some(Err(SqlError::Syntax(_)))
        ));
        assert!(owner_to(&catalog, "ALTER TYPE IF EXISTS mood OWNER TO x").is_none());
        assert!(matches!(
            owner_to(&catalog, "alter type public.mood owner to current_user"),
            Some(Err(SqlError::UnknownType(t))) if t == "mood"
        ));
    }
}
