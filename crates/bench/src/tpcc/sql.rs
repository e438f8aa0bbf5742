//! The statements of the five transactions, one text each, shared by the two ways that run
//! them: interactive blocks over the wire (txns.rs, which takes the rows a transaction
//! goes on to change `FOR UPDATE`, for PostgreSQL's READ COMMITTED) and the stored
//! procedures (procs.rs, which run at their partitions one at a time and take no locks).
//! Amounts cross as whole cents (`$n::integer * 0.01`, `CAST(... * 100 AS bigint)`), so
//! the client does no decimal arithmetic.

// New-Order (clause 2.4.2).
pub const NO_CUSTOMER: &str = "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse \
     WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3";
pub const NO_DISTRICT: &str = "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 \
     RETURNING d_next_o_id - 1, d_tax";
pub const NO_ORDER: &str = "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, \
     o_all_local) VALUES ($1, $2, $3, $4, LOCALTIMESTAMP, NULL, $5, $6)";
pub const NO_NEW_ORDER: &str = "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)";
pub const NO_ITEM: &str = "SELECT CAST(i_price * 100 AS bigint), i_name, i_data FROM item WHERE i_id = $1";
pub const NO_STOCK_UPDATE: &str = "UPDATE stock SET s_quantity = $1, s_ytd = s_ytd + $2, \
     s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $3 WHERE s_i_id = $4 AND s_w_id = $5";
pub const NO_LINE: &str = "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, \
     ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) \
     VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8::integer * 0.01, $9)";

/// New-Order's read of an item's stock at a supplying warehouse, with the district
/// information of district `d` (1 to 10).
pub fn no_stock(d: u32) -> String {
    format!("SELECT s_quantity, s_data, s_dist_{d:02} FROM stock WHERE s_i_id = $1 AND s_w_id = $2")
}

/// The quantity left in stock after an order of `ordered` (clause 2.4.2.2).
pub fn stock_left(quantity: i64, ordered: i64) -> i64 {
    if quantity >= ordered + 10 {
        quantity - ordered
    } else {
        quantity - ordered + 91
    }
}

// Payment (clause 2.5.2).
pub const P_WAREHOUSE: &str = "UPDATE warehouse SET w_ytd = w_ytd + $1::integer * 0.01 WHERE w_id = $2 \
     RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip";
pub const P_DISTRICT: &str = "UPDATE district SET d_ytd = d_ytd + $1::integer * 0.01 WHERE d_w_id = $2 AND d_id = $3 \
     RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip";
/// A district's customers with a last name, by first name (Payment and Order-Status).
pub const BY_NAME: &str =
    "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first";
pub const P_CUSTOMER: &str = "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
     c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer \
     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3";
pub const P_CUSTOMER_DATA: &str = "SELECT c_data FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3";
pub const P_UPDATE_BC: &str = "UPDATE customer SET c_balance = c_balance - $1::integer * 0.01, \
     c_ytd_payment = c_ytd_payment + $1::integer * 0.01, c_payment_cnt = c_payment_cnt + 1, \
     c_data = $2 WHERE c_w_id = $3 AND c_d_id = $4 AND c_id = $5";
pub const P_UPDATE: &str = "UPDATE customer SET c_balance = c_balance - $1::integer * 0.01, \
     c_ytd_payment = c_ytd_payment + $1::integer * 0.01, c_payment_cnt = c_payment_cnt + 1 \
     WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4";
pub const P_HISTORY: &str = "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, \
     h_data) VALUES ($1, $2, $3, $4, $5, LOCALTIMESTAMP, $6::integer * 0.01, $7)";

/// A bad-credit customer's new C_DATA: the payment's description in front of the old
/// data, cut to 500 characters (clause 2.5.2.2).
pub fn bad_credit_data(c: i64, (c_w, c_d): (i64, i64), (w, d): (i64, i64), cents: i64, old: &str) -> String {
    let mut new = format!("{c} {c_d} {c_w} {d} {w} {}.{:02} | {old}", cents / 100, cents % 100);
    let mut end = new.len().min(500);
    while !new.is_char_boundary(end) {
        end -= 1;
    }
    new.truncate(end);
    new
}

// Order-Status (clause 2.6.2).
pub const OS_CUSTOMER: &str = "SELECT c_balance, c_first, c_middle, c_last FROM customer \
     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3";
pub const OS_ORDER: &str = "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = $1 AND o_d_id = $2 \
     AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1";
pub const OS_LINES: &str = "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3";

// Delivery (clause 2.7.4).
pub const D_OLDEST: &str = "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1";
pub const D_DELETE: &str = "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3";
pub const D_ORDER: &str = "UPDATE orders SET o_carrier_id = $1 WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4 \
     RETURNING o_c_id";
pub const D_LINES: &str = "UPDATE order_line SET ol_delivery_d = LOCALTIMESTAMP \
     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3";
pub const D_SUM: &str = "SELECT CAST(SUM(ol_amount) * 100 AS bigint) FROM order_line \
     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3";
pub const D_CUSTOMER: &str = "UPDATE customer SET c_balance = c_balance + $1::bigint * 0.01, \
     c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4";

// Stock-Level (clause 2.8.2).
pub const SL_NEXT: &str = "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2";
pub const SL_COUNT: &str = "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 \
     AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $3 - 20 AND s_w_id = $1 AND s_i_id = ol_i_id \
     AND s_quantity < $4";
