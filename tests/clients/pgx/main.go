// pgx (v5) against a running `permafrost serve`: its default extended protocol with binary
// formats, and the simple protocol (text), for arrays, jsonb, uuid, timestamptz, numeric,
// date, bytea and booleans; = ANY over an array parameter; a pgx.Batch (pipelined
// statements); a transaction that commits and one that rolls back; CopyFrom (binary COPY).
//
// Usage: go run . PORT. Each check prints ok/FAIL; the exit status is the number of failures.
package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

var failed, checks int

func check(name string, fn func() error) {
	checks++
	if err := fn(); err != nil {
		failed++
		fmt.Printf("FAIL %s: %v\n", name, err)
		return
	}
	fmt.Printf("ok   %s\n", name)
}

type row struct {
	ID    int64
	Tags  []string
	Doc   map[string]any
	U     pgtype.UUID
	At    time.Time
	Price pgtype.Numeric
	Day   time.Time
	Blob  []byte
	Flag  bool
}

func readRow(ctx context.Context, c *pgx.Conn, mode pgx.QueryExecMode, id int64) (row, error) {
	var r row
	err := c.QueryRow(ctx, "SELECT id, tags, doc, u, at, price, day, blob, flag FROM pgx_items WHERE id = $1", mode, id).
		Scan(&r.ID, &r.Tags, &r.Doc, &r.U, &r.At, &r.Price, &r.Day, &r.Blob, &r.Flag)
	return r, err
}

func main() {
	if len(os.Args) != 2 {
		fmt.Println("usage: pgx PORT")
		os.Exit(2)
	}
	ctx := context.Background()
	url := fmt.Sprintf("postgres://permafrost@127.0.0.1:%s/permafrost?sslmode=disable", os.Args[1])
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(1)
	}
	defer c.Close(ctx)
	_, _ = c.Exec(ctx, "DROP TABLE IF EXISTS pgx_items")
	_, err = c.Exec(ctx, `CREATE TABLE pgx_items (id BIGINT PRIMARY KEY, tags TEXT[], doc JSONB, u UUID,
		at TIMESTAMPTZ, price NUMERIC(10,2), day DATE, blob BYTEA, flag BOOLEAN)`)
	if err != nil {
		fmt.Println("create:", err)
		os.Exit(1)
	}
	at := time.Date(2024, 3, 1, 12, 30, 45, 123456000, time.UTC)
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	u := pgtype.UUID{Bytes: [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}, Valid: true}
	var price pgtype.Numeric
	_ = price.Scan("12.50")
	want := row{ID: 1, Tags: []string{"a", "b c", "d,e"}, Doc: map[string]any{"k": "v", "n": float64(2)}, U: u,
		At: at, Price: price, Day: day, Blob: []byte{0, 1, 0xfe}, Flag: true}

	for _, m := range []struct {
		name string
		mode pgx.QueryExecMode
		id   int64
	}{
		{"binary (extended protocol, cached statements)", pgx.QueryExecModeCacheStatement, 1},
		{"text (simple protocol)", pgx.QueryExecModeSimpleProtocol, 2},
	} {
		m := m
		check("pgx values in "+m.name+": text[], jsonb, uuid, timestamptz, numeric, date, bytea, bool", func() error {
			w := want
			w.ID = m.id
			// (The simple protocol sends values as text without their types: pgx writes a
			// map there only as JSON text it is given.)
			var doc any = w.Doc
			if m.mode == pgx.QueryExecModeSimpleProtocol {
				doc = `{"k": "v", "n": 2}`
			}
			_, err := c.Exec(ctx, "INSERT INTO pgx_items VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", m.mode,
				w.ID, w.Tags, doc, w.U, w.At, w.Price, w.Day, w.Blob, w.Flag)
			if err != nil {
				return err
			}
			got, err := readRow(ctx, c, m.mode, m.id)
			if err != nil {
				return err
			}
			got.At = got.At.UTC()
			got.Day = got.Day.UTC()
			if got.Price.Int.Cmp(w.Price.Int) != 0 || got.Price.Exp != w.Price.Exp {
				return fmt.Errorf("price %v, want %v", got.Price, w.Price)
			}
			got.Price, w.Price = pgtype.Numeric{}, pgtype.Numeric{}
			if !reflect.DeepEqual(got, w) {
				return fmt.Errorf("read back %+v, want %+v", got, w)
			}
			return nil
		})
	}

	check("pgx = ANY($1) over a []int64 parameter, and a jsonb containment lookup", func() error {
		rows, err := c.Query(ctx, "SELECT id FROM pgx_items WHERE id = ANY($1) AND doc @> $2 ORDER BY id",
			[]int64{2, 1, 7}, map[string]any{"k": "v"})
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(ids, []int64{1, 2}) {
			return fmt.Errorf("ids %v", ids)
		}
		return nil
	})

	check("pgx.Batch: pipelined inserts and a query in one round trip", func() error {
		b := &pgx.Batch{}
		for i := int64(10); i < 15; i++ {
			b.Queue("INSERT INTO pgx_items (id, tags, flag) VALUES ($1, $2, $3)", i, []string{fmt.Sprint(i)}, i%2 == 0)
		}
		b.Queue("SELECT count(*) FROM pgx_items WHERE id >= 10")
		br := c.SendBatch(ctx, b)
		for i := 0; i < 5; i++ {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		var n int64
		if err := br.QueryRow().Scan(&n); err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		if n != 5 {
			return fmt.Errorf("count %d", n)
		}
		return nil
	})

	check("pgx transactions: a commit keeps, a rollback leaves nothing", func() error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO pgx_items (id) VALUES (20)"); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		tx, err = c.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO pgx_items (id) VALUES (21)"); err != nil {
			return err
		}
		if err := tx.Rollback(ctx); err != nil {
			return err
		}
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pgx_items WHERE id IN (20, 21)").Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("count %d, want 1", n)
		}
		return nil
	})

	check("pgx CopyFrom (binary COPY): rows of arrays, uuids and timestamps", func() error {
		rows := [][]any{}
		for i := int64(100); i < 150; i++ {
			rows = append(rows, []any{i, []string{"x", fmt.Sprint(i)}, u, at.Add(time.Duration(i) * time.Second)})
		}
		n, err := c.CopyFrom(ctx, pgx.Identifier{"pgx_items"}, []string{"id", "tags", "u", "at"}, pgx.CopyFromRows(rows))
		if err != nil {
			return err
		}
		if n != 50 {
			return fmt.Errorf("copied %d", n)
		}
		var tags []string
		var t time.Time
		if err := c.QueryRow(ctx, "SELECT tags, at FROM pgx_items WHERE id = 149").Scan(&tags, &t); err != nil {
			return err
		}
		if !reflect.DeepEqual(tags, []string{"x", "149"}) || !t.Equal(at.Add(149*time.Second)) {
			return fmt.Errorf("row 149: %v %v", tags, t)
		}
		return nil
	})

	_, _ = c.Exec(ctx, "DROP TABLE pgx_items")
	fmt.Printf("pgx: %d passed, %d failed\n", checks-failed, failed)
	os.Exit(failed)
}
