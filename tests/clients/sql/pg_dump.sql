-- Restoring a plain pg_dump of PostgreSQL 15 (psql -f): its settings, objects qualified
-- with public., OWNER TO, sequences OWNED BY their columns, COPY ... FROM stdin, setval,
-- constraints added after the data, then the restored database used and changed.
-- (Only pg_dump's \restrict / \unrestrict lines, which psql 15.18 acts on, are left out.)
SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

CREATE TYPE public.status AS ENUM (
    'new',
    'paid',
    'shipped'
);

ALTER TYPE public.status OWNER TO postgres;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE public.orders (
    id bigint NOT NULL,
    customer_id integer NOT NULL,
    st public.status DEFAULT 'new'::public.status,
    total numeric(10,2),
    meta jsonb,
    tags text[],
    ip inet,
    placed date,
    CONSTRAINT orders_total_check CHECK ((total >= (0)::numeric))
);

ALTER TABLE public.orders OWNER TO postgres;

COMMENT ON TABLE public.orders IS 'all orders';

CREATE VIEW public.big_orders AS
 SELECT orders.id,
    orders.customer_id,
    orders.st,
    orders.total,
    orders.meta,
    orders.tags,
    orders.ip,
    orders.placed
   FROM public.orders
  WHERE (orders.total > (100)::numeric);

ALTER TABLE public.big_orders OWNER TO postgres;

CREATE TABLE public.customers (
    id integer NOT NULL,
    name text NOT NULL,
    email text,
    created timestamp with time zone DEFAULT now()
);

ALTER TABLE public.customers OWNER TO postgres;

CREATE SEQUENCE public.customers_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE public.customers_id_seq OWNER TO postgres;

ALTER SEQUENCE public.customers_id_seq OWNED BY public.customers.id;

CREATE SEQUENCE public.orders_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER TABLE public.orders_id_seq OWNER TO postgres;

ALTER SEQUENCE public.orders_id_seq OWNED BY public.orders.id;

ALTER TABLE ONLY public.customers ALTER COLUMN id SET DEFAULT nextval('public.customers_id_seq'::regclass);

ALTER TABLE ONLY public.orders ALTER COLUMN id SET DEFAULT nextval('public.orders_id_seq'::regclass);

COPY public.customers (id, name, email, created) FROM stdin;
1	ann	a@x	2024-03-01 12:00:00+00
2	bob	b@x	2024-03-01 12:00:00+00
3	cy	\N	2024-03-01 12:00:00+00
\.

COPY public.orders (id, customer_id, st, total, meta, tags, ip, placed) FROM stdin;
1	1	paid	150.50	{"a": 1}	{x,y}	10.0.0.1	2024-01-02
2	2	new	20.00	\N	\N	\N	\N
3	1	shipped	0.00	[]	{}	::1	2023-12-31
\.

SELECT pg_catalog.setval('public.customers_id_seq', 3, true);

SELECT pg_catalog.setval('public.orders_id_seq', 3, true);

ALTER TABLE ONLY public.customers
    ADD CONSTRAINT customers_email_key UNIQUE (email);

ALTER TABLE ONLY public.customers
    ADD CONSTRAINT customers_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.orders
    ADD CONSTRAINT orders_pkey PRIMARY KEY (id);

CREATE INDEX orders_customer ON public.orders USING btree (customer_id);

ALTER TABLE ONLY public.orders
    ADD CONSTRAINT orders_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES public.customers(id) ON DELETE CASCADE;


SELECT * FROM customers;
RESET ALL;
SELECT * FROM public.customers ORDER BY id;
SELECT id, customer_id, st, total, meta, tags, ip, placed FROM orders ORDER BY id;
SELECT * FROM big_orders;
INSERT INTO customers (name, email) VALUES ('dee', 'd@x') RETURNING id, name;
INSERT INTO orders (customer_id, total) VALUES (4, 7) RETURNING id, st;
SELECT pg_get_serial_sequence('customers', 'id'), pg_get_serial_sequence('public.orders', 'id');
\d customers_id_seq
\d customers
INSERT INTO orders (customer_id, total) VALUES (99, 1);
INSERT INTO orders (customer_id, total) VALUES (1, -1);
INSERT INTO customers (id, name, email) VALUES (5, 'eve', 'a@x');
DELETE FROM customers WHERE id = 1;
SELECT id, customer_id FROM orders ORDER BY id;
-- Ownership and privileges: every client holds them.
GRANT SELECT, INSERT ON TABLE public.customers TO PUBLIC;
GRANT ALL ON SEQUENCE public.customers_id_seq TO PUBLIC;
GRANT USAGE ON SCHEMA public TO PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO PUBLIC;
GRANT SELECT ON nosuch TO PUBLIC;
GRANT USAGE ON SCHEMA nosuch TO PUBLIC;
ALTER TABLE nosuch OWNER TO postgres;
ALTER TABLE IF EXISTS nosuch OWNER TO postgres;
ALTER VIEW public.big_orders OWNER TO CURRENT_USER;
ALTER SEQUENCE customers_id_seq OWNER TO postgres;
ALTER TYPE nosuch OWNER TO postgres;
-- A sequence goes with the column that owns it.
CREATE TABLE items (n integer NOT NULL, label text);
CREATE SEQUENCE items_n_seq OWNED BY items.n;
ALTER TABLE items ALTER COLUMN n SET DEFAULT nextval('items_n_seq');
INSERT INTO items (label) VALUES ('a'), ('b');
ALTER TABLE items RENAME COLUMN n TO num;
\d items_n_seq
SELECT c.relname, d.refobjsubid, d.deptype FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
 WHERE d.refobjid = 'items'::regclass AND d.deptype = 'a';
ALTER SEQUENCE items_n_seq OWNED BY items.nosuch;
ALTER SEQUENCE items_n_seq OWNED BY nosuch.num;
ALTER SEQUENCE items_n_seq OWNED BY num;
ALTER TABLE items ALTER COLUMN num DROP DEFAULT;
ALTER TABLE items DROP COLUMN num;
SELECT relname FROM pg_class WHERE relkind = 'S' ORDER BY relname;
CREATE SEQUENCE kept_seq OWNED BY items.label;
ALTER SEQUENCE kept_seq OWNED BY NONE;
DROP TABLE items;
SELECT relname FROM pg_class WHERE relkind = 'S' ORDER BY relname;
DROP VIEW big_orders;
DROP TABLE orders;
SELECT relname FROM pg_class WHERE relkind = 'S' ORDER BY relname;
-- Settings pg_dump sends.
SET client_min_messages = warning;
DROP TABLE IF EXISTS nosuch;
SET client_min_messages = 'NOTICE';
DROP TABLE IF EXISTS nosuch;
SET client_min_messages = loud;
SET check_function_bodies = 'of';
SHOW check_function_bodies;
SET check_function_bodies = maybe;
SET row_security = 0;
SHOW row_security;
SET xmloption = document;
SHOW xmloption;
SET default_tablespace = nosuch;
SET default_tablespace = pg_default;
SHOW default_tablespace;
-- (Leaves nothing behind for the next file.)
DROP TABLE customers;
DROP SEQUENCE kept_seq;
DROP TYPE status;
SELECT relname FROM pg_class WHERE relname IN ('customers', 'customers_id_seq', 'kept_seq');
