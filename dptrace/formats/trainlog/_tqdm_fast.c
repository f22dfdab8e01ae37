/*
 * dptrace.formats.trainlog._tqdm_fast: trainlog.general._tqdm_updates in C (optional; see setup.py).
 *
 *     configure(pre_cache, pre_info, unit_cache, unit_kind, tqdm_count, postfix, scan_text,
 *               snake)
 *     tqdm_updates(text, line_prefix, line, start, rows) -> bool
 *     cr_line(raw, whole_start, line, start, rows) -> bool
 *     Table(kinds): rows kept as columns (the fast engine's rows.tp and rows.tm)
 *     configure_scan(...), scan(buf, pos, end, start, counted, line, rows): the scanner's loop
 *     (general._Scanner.run) for the lines it is sure of; see the section "scan()" below
 *     configure_literals(literals): the keywords that are plain literals (scan() reads a
 *     '\r' line holding one without calling the matcher)
 *
 * tqdm_updates() adds to rows.tp / rows.tm exactly the rows that the pure-Python
 * trainlog._tqdm_updates() appends and returns True, or adds nothing and returns False
 * ("decline": the caller then runs the Python function). It declines whenever it is not
 * sure, and it only adds rows once the whole line has been read without a doubt, so a decline
 * never leaves half a line behind. rows.tp / rows.tm are lists (then it appends the very
 * tuples Python would) or Tables (then it writes the values into their columns, with no
 * tuple, int or float object made per row).
 *
 * What is done in C: cutting the line at '\r', matching each segment against
 * trainlog._UPDATES (= _trainlog_rules.TQDM_SEGMENT anchored at a segment start), the rate's
 * float(), the count's int() when it is plain digits, the dict look-ups in _PRE and _UNIT,
 * the key=value pairs of an ASCII postfix (rules.postfix_pairs: rules._POSTFIX and float; the
 * names from a cache of rules._snake), and the rows. Everything else is the very same Python
 * code, called back: _pre_info(pre) and rules.rate_unit(scale, unit, per) on cache misses,
 * rules._tqdm_count(count) for counts like '1.5k', rules._snake(key) for a key not in the
 * cache, rules.postfix_pairs(post) for a postfix with non-ASCII characters, and
 * _SCAN_TEXT.search for an unmatched first segment.
 *
 * Declines: a non-ASCII character that Unicode calls numeric anywhere in the line (Python's
 * \d, str.isdigit, int() and float() accept Unicode digits; this code only knows 0-9), a
 * plain-digit count of more than 18 digits, a rate or postfix value longer than 300
 * characters, any exception raised by a callback (the Python path then raises it, or not,
 * itself), unexpected types in the caches, rows.tp / rows.tm neither lists nor Tables, text
 * not a str.
 *
 * The grammar, TQDM_SEGMENT (NUM = [-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?):
 *
 *   (?P<pre>[^\r]{0,240}?)                         lazy: the smallest length that works
 *   (?P<n>\d+(?:\.\d+)?[kMGT]?)                    A
 *   (?:/(?:\d+(?:\.\d+)?[kMGT]?|\?))?              B
 *   [A-Za-z]{0,20}[ \t]*                           C, D
 *   \[\d[\d:]*(?:<[\d:?]+)?,[ \t]*                 E, F, G
 *   (?:(?P<rate>NUM)|\?)[ \t]*                     H, I
 *   (?P<scale>[kMGT]?)(?P<unit>[A-Za-z_]{1,30})/   J, K
 *   (?P<per>s|[A-Za-z_]{1,30})                     M
 *   (?P<post>[^\]\r]{0,500})\](?![^\r]*\{')[^\r]*   N, O, P
 *
 * Python's re tries pre lengths 0, 1, ..., 240 (never past a '\r') and, at each, the rest
 * with backtracking; the first success gives the groups. This code tries the same pre
 * lengths in the same order (only where a digit starts, as A needs one) and decides the
 * rest without backtracking, because each choice point of the rest has one outcome that
 * can succeed, or the greedy outcome succeeds whenever another would, with the same groups:
 *
 *  A  \d+ : giving a digit back leaves a digit next, which nothing after A accepts
 *     ('.', kMGT, '/', letters, blanks, '['): maximal. (?:\.\d+)? : when '.' follows, it must
 *     be taken (nothing after accepts '.'), so '.' without a digit after it fails; its \d+
 *     is maximal as above. [kMGT]? : when the letter is not taken, C must take it; C then
 *     holds that letter plus the letters after it, with the same end; taking it leaves C
 *     one letter shorter, so taking succeeds whenever not taking does: greedy (the groups
 *     of the first success are those of the greedy choice).
 *  B  when '/' follows, B must be taken ('/' is accepted by nothing else); inside, \d+ and
 *     (?:\.\d+)? and [kMGT]? as in A; '?' is the other alternative (exclusive).
 *  C  [A-Za-z]{0,20}: giving back leaves a letter next, which D and E do not accept:
 *     the whole run of letters, and fail when it is longer than 20.
 *  D, G, I  blanks: the next token (E '[', H sign/digit/'.'/'?', J/K letters) accepts no
 *     blank: maximal.
 *  F  [\d:]* and [\d:?]+ are followed by '<' or ',', which they do not contain: maximal;
 *     the '<' group must be taken when '<' follows (',' is expected otherwise).
 *  H  NUM and '?' start with different characters. In NUM: the sign must be taken when
 *     present; \d+\.?\d* vs \.\d+ start differently; every split of the mantissa ends at
 *     the end of the digits[.digits] run (a digit or '.' left over is accepted by nothing
 *     after NUM: blanks, kMGT, [A-Za-z_]), so the rate's span is that run whatever the
 *     split. The exponent group is taken iff [eE][-+]?\d+ matches (\d+ maximal): if it
 *     were not taken, K would have to start at the 'e', take just it (a sign or digit
 *     follows) and meet a sign or digit instead of '/'.
 *  J, K  K takes the whole run R of [A-Za-z_] (giving back leaves a letter before '/'),
 *     and R must be followed by '/'. J greedy takes a kMGT first letter; that fails only
 *     when nothing is left for K (len(R) == 1) or R[1:] is longer than 30, and in the
 *     latter case J empty fails too (R longer still). So: scale = R[0] if R[0] in kMGT and
 *     len(R) >= 2; unit = the rest, at most 30 long.
 *  M, N, O  N is [^\]\r]{0,500} then ']': it must end at the first ']' (no ']' inside it;
 *     giving back leaves a non-']' next), so M+N+O succeed iff the first ']' after M's
 *     start is at most 500 characters after M's end. M tries 's' first; then the run of
 *     [A-Za-z_] (at most 30, greedy: a shorter per only makes N longer).
 *  P  [^\r]* takes the rest of the segment; it fails only when the rest holds "{'" (a
 *     Python dict printed after the bar: the segment is not an update).
 *
 * Each match therefore spans a whole '\r' segment, and findall's matches are exactly the
 * segments (from the line start or after a '\r') at which this succeeds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

/* run_line: the first segments that are not updates, seen before -> whether they hold no
 * keyword (scan_text's answer); cleared at MAX_HEADS, made anew by configure() */
#define MAX_HEADS 4096
static PyObject *head_cache;
static PyObject *pre_cache, *pre_info, *unit_cache, *unit_kind, *tqdm_count, *postfix,
    *scan_text, *snake, *s_tqdm, *s_instance, *s_tp, *s_tm;

/* The last (scale, unit, per) and pre looked up, with what _UNIT / _PRE gave for them
 * (strong references; reset by configure()). rate_unit and _pre_info are pure functions of
 * their arguments and _UNIT / _PRE only ever hold their results, so for an equal key the
 * Python code gets this very value (or an equal one, recomputed after _PRE.clear()). */
static PyObject *memo_scale, *memo_unit, *memo_per, *memo_kind, *memo_pre, *memo_info;

typedef struct {
    int kind;
    const void *data;
} Text;

#define CH(t, i) PyUnicode_READ((t)->kind, (t)->data, (i))
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_ALPHA(c) (((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z'))
#define IS_WORD(c) (IS_ALPHA(c) || (c) == '_')
#define IS_BLANK(c) ((c) == ' ' || (c) == '\t')
#define IS_KMGT(c) ((c) == 'k' || (c) == 'M' || (c) == 'G' || (c) == 'T')

typedef struct {
    Py_ssize_t n_s, n_e, rate_s, rate_e, scale_s, scale_e, unit_s, unit_e, per_s, per_e,
        post_s, post_e;
} Match;

/* digits from i (i < e or not); returns the index after them */
static Py_ssize_t
digits(const Text *t, Py_ssize_t i, Py_ssize_t e)
{
    while (i < e && IS_DIGIT(CH(t, i)))
        i++;
    return i;
}

/* \d+(?:\.\d+)?[kMGT]? at i (a digit is there); -1 when it cannot be part of a match */
static Py_ssize_t
count_part(const Text *t, Py_ssize_t i, Py_ssize_t e)
{
    i = digits(t, i, e);
    if (i < e && CH(t, i) == '.') {
        if (!(i + 1 < e && IS_DIGIT(CH(t, i + 1))))
            return -1;
        i = digits(t, i + 1, e);
    }
    if (i < e && IS_KMGT(CH(t, i)))
        i++;
    return i;
}

/* everything of TQDM_SEGMENT after pre, at p in a segment ending at e: 1 match, 0 none */
static int
rest(const Text *t, Py_ssize_t p, Py_ssize_t e, Match *m)
{
    Py_ssize_t i = p, j, k, r;
    Py_UCS4 c;

    if (!(i < e && IS_DIGIT(CH(t, i))))
        return 0;
    m->n_s = i;
    if ((i = count_part(t, i, e)) < 0)
        return 0;
    m->n_e = i;
    if (i < e && CH(t, i) == '/') { /* B */
        i++;
        if (i < e && IS_DIGIT(CH(t, i))) {
            if ((i = count_part(t, i, e)) < 0)
                return 0;
        }
        else if (i < e && CH(t, i) == '?')
            i++;
        else
            return 0;
    }
    for (j = i; j < e && IS_ALPHA(CH(t, j)); j++) /* C */
        ;
    if (j - i > 20)
        return 0;
    for (i = j; i < e && IS_BLANK(CH(t, i)); i++) /* D */
        ;
    if (!(i < e && CH(t, i) == '[')) /* E */
        return 0;
    i++;
    if (!(i < e && IS_DIGIT(CH(t, i)))) /* F */
        return 0;
    for (i++; i < e && ((c = CH(t, i)) == ':' || IS_DIGIT(c)); i++)
        ;
    if (i < e && CH(t, i) == '<') {
        for (j = ++i; i < e && ((c = CH(t, i)) == ':' || c == '?' || IS_DIGIT(c)); i++)
            ;
        if (i == j)
            return 0;
    }
    if (!(i < e && CH(t, i) == ','))
        return 0;
    for (i++; i < e && IS_BLANK(CH(t, i)); i++) /* G */
        ;
    if (i < e && CH(t, i) == '?') { /* H */
        m->rate_s = m->rate_e = -1;
        i++;
    }
    else {
        m->rate_s = i;
        if (i < e && ((c = CH(t, i)) == '-' || c == '+'))
            i++;
        if (i < e && IS_DIGIT(CH(t, i))) {
            i = digits(t, i, e);
            if (i < e && CH(t, i) == '.')
                i = digits(t, i + 1, e);
        }
        else if (i + 1 < e && CH(t, i) == '.' && IS_DIGIT(CH(t, i + 1)))
            i = digits(t, i + 1, e);
        else
            return 0;
        if (i < e && ((c = CH(t, i)) == 'e' || c == 'E')) {
            j = i + 1;
            if (j < e && ((c = CH(t, j)) == '-' || c == '+'))
                j++;
            if (j < e && IS_DIGIT(CH(t, j)))
                i = digits(t, j, e);
        }
        m->rate_e = i;
    }
    for (; i < e && IS_BLANK(CH(t, i)); i++) /* I */
        ;
    for (j = i; j < e && IS_WORD(CH(t, j)); j++) /* J, K */
        ;
    r = j - i;
    if (r == 0 || !(j < e && CH(t, j) == '/'))
        return 0;
    if (IS_KMGT(CH(t, i)) && r >= 2) {
        if (r - 1 > 30)
            return 0;
        m->scale_s = i;
        m->scale_e = m->unit_s = i + 1;
    }
    else {
        if (r > 30)
            return 0;
        m->scale_s = m->scale_e = m->unit_s = i;
    }
    m->unit_e = j;
    i = j + 1; /* M, N, O */
    for (k = i; k < e && CH(t, k) != ']'; k++)
        ;
    if (k >= e)
        return 0;
    if (i < e && CH(t, i) == 's' && k - (i + 1) <= 500) {
        m->per_s = i;
        m->per_e = i + 1;
    }
    else {
        for (j = i; j < e && j - i < 30 && IS_WORD(CH(t, j)); j++)
            ;
        if (j == i || k - j > 500)
            return 0;
        m->per_s = i;
        m->per_e = j;
    }
    for (j = k + 1; j + 1 < e; j++) /* P: no "{'" after the bar (a dict: not an update) */
        if (CH(t, j) == '{' && CH(t, j + 1) == '\'')
            return 0;
    m->post_s = m->per_e;
    m->post_e = k;
    return 1;
}

/* the segment [s, e) as a whole update: 1 (m filled, pre = [s, pre_end)), 0 not one */
static int
segment(const Text *t, Py_ssize_t s, Py_ssize_t e, Match *m)
{
    Py_ssize_t p, last = s + 240 < e ? s + 240 : e - 1;

    /* a digit after a digit is not tried: the count's \d+ from it ends where it ends from
     * the first digit of their run, which was tried (and what follows decides) */
    for (p = s; p <= last; p++) {
        if (IS_DIGIT(CH(t, p)) && !(p > s && IS_DIGIT(CH(t, p - 1))) && rest(t, p, e, m))
            return 1;
    }
    return 0;
}

/* an exception of a callback: decline (0) for ordinary ones, propagate (-1) the others */
static int
callback_failed(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* --- Table: rows kept as columns ------------------------------------------------------------
 *
 *     Table(kinds) ; kinds: one letter a column, 'c' a string or None (codes into the
 *                    distinct values), 'i' an int of 64 bits, 'd' a float, 's' an int of 64
 *                    bits or None, 'e' a float or None
 *     table.append(row)  one tuple, as Rows appends them to a list
 *     len(table), table.rows() (the tuples back), table.take() (the columns; empties it)
 *
 * The fast engine's Rows holds two of these instead of lists of tuples: cr_line() writes its
 * rows straight into them (no tuple, int or float object per row), the Python recognisers
 * append tuples, and read.py builds the frames from whole columns. A value of another type
 * than its column's letter (a step that is a float or does not fit 64 bits, say) turns that
 * column into a list of the Python objects, from then on: take() gives those, and the frame
 * gets them as pandas gets them from a list of tuples, so any row the general engine's lists
 * can hold is held here too, to the same frame. */

#define MAX_COLS 16

typedef struct {
    char kind;
    PyObject *data;    /* bytearray: int32 codes ('c'), int64 ('i', 's'), double ('d', 'e') */
    PyObject *nulls;   /* bytearray of 0/1, 's' and 'e' */
    PyObject *index;   /* 'c': dict value -> code */
    PyObject *values;  /* 'c': list of the distinct values, by code */
    PyObject *memo;    /* 'c': the last value put, and its code */
    int32_t memo_code;
    PyObject *memo2;   /* 'c': the value put before memo (two names alternate), its code */
    int32_t memo2_code;
    PyObject *objs;    /* the column as a list of objects, once a value did not fit; else NULL */
} Col;

typedef struct {
    PyObject_HEAD
    int ncols;
    Py_ssize_t n, cap;
    Col cols[MAX_COLS];
} Table;

static PyTypeObject TableType;

static int
width(char kind)
{
    return kind == 'c' ? 4 : 8;
}

static void
col_clear(Col *c)
{
    Py_CLEAR(c->data);
    Py_CLEAR(c->nulls);
    Py_CLEAR(c->index);
    Py_CLEAR(c->values);
    Py_CLEAR(c->memo);
    Py_CLEAR(c->memo2);
    Py_CLEAR(c->objs);
}

/* empty columns of the table's kinds (existing ones released); -1 on error */
static int
table_reset(Table *T)
{
    int k;

    T->n = T->cap = 0;
    for (k = 0; k < T->ncols; k++) {
        Col *c = &T->cols[k];
        char kind = c->kind;
        col_clear(c);
        c->kind = kind;
        c->memo_code = -1;
        if (!(c->data = PyByteArray_FromStringAndSize(NULL, 0)))
            return -1;
        if ((kind == 's' || kind == 'e') && !(c->nulls = PyByteArray_FromStringAndSize(NULL, 0)))
            return -1;
        if (kind == 'c' && (!(c->index = PyDict_New()) || !(c->values = PyList_New(0))))
            return -1;
    }
    return 0;
}

/* room for one more row: the row's index, or -1 on error */
static Py_ssize_t
table_room(Table *T)
{
    int k;
    Py_ssize_t cap;

    if (T->n < T->cap)
        return T->n;
    cap = T->cap < 1024 ? 1024 : 2 * T->cap; /* take() gives back what is not used */
    for (k = 0; k < T->ncols; k++) {
        Col *c = &T->cols[k];
        if (c->objs)
            continue;
        if (PyByteArray_Resize(c->data, cap * width(c->kind)) < 0 ||
            (c->nulls && PyByteArray_Resize(c->nulls, cap) < 0))
            return -1;
    }
    T->cap = cap;
    return T->n;
}

#define COL_I64(c) ((long long *)PyByteArray_AS_STRING((c)->data))
#define COL_F64(c) ((double *)PyByteArray_AS_STRING((c)->data))
#define COL_I32(c) ((int32_t *)PyByteArray_AS_STRING((c)->data))
#define COL_NULL(c) ((unsigned char *)PyByteArray_AS_STRING((c)->nulls))

/* the value of row i of a typed column as a new reference */
static PyObject *
col_value(Col *c, Py_ssize_t i)
{
    int32_t code;

    if (c->objs)
        return Py_NewRef(PyList_GET_ITEM(c->objs, i));
    if (c->nulls && COL_NULL(c)[i])
        Py_RETURN_NONE;
    switch (c->kind) {
    case 'c':
        code = COL_I32(c)[i];
        if (code < 0)
            Py_RETURN_NONE;
        return Py_NewRef(PyList_GET_ITEM(c->values, code));
    case 'i':
    case 's':
        return PyLong_FromLongLong(COL_I64(c)[i]);
    default:
        return PyFloat_FromDouble(COL_F64(c)[i]);
    }
}

/* turn a column into a list of objects (its first n rows); -1 on error */
static int
col_to_objects(Col *c, Py_ssize_t n)
{
    PyObject *objs = PyList_New(n), *v;
    Py_ssize_t i;

    if (!objs)
        return -1;
    for (i = 0; i < n; i++) {
        if (!(v = col_value(c, i))) {
            Py_DECREF(objs);
            return -1;
        }
        PyList_SET_ITEM(objs, i, v);
    }
    c->objs = objs;
    return 0;
}

/* whether the exact str a equals b (a str or NULL): same kind, length and code units */
static int
same_str(PyObject *a, PyObject *b)
{
    Py_ssize_t n;

    if (b == NULL || !PyUnicode_CheckExact(b) || (n = PyUnicode_GET_LENGTH(a)) != PyUnicode_GET_LENGTH(b) ||
        PyUnicode_KIND(a) != PyUnicode_KIND(b))
        return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)(n * PyUnicode_KIND(a))) == 0;
}

/* row i of a 'c' column is its memo2's value: its code, and the two memos swapped (two
 * names that alternate, as a postfix's keys do); 0 */
static inline int
memo_swap(Col *c, Py_ssize_t i)
{
    PyObject *o = c->memo;
    int32_t oc = c->memo_code;

    COL_I32(c)[i] = c->memo_code = c->memo2_code;
    c->memo = c->memo2;
    c->memo2 = o;
    c->memo2_code = oc;
    return 0;
}

/* row i (== T->n: rows are written in order) of column c is v (any object); -1 on error */
static int
put_obj_any(Table *T, Col *c, Py_ssize_t i, PyObject *v)
{
    long long x;
    int overflow;

    if (c->objs)
        return PyList_Append(c->objs, v);
    if (c->nulls)
        COL_NULL(c)[i] = v == Py_None;
    switch (c->kind) {
    case 'c':
        if (v == Py_None) {
            COL_I32(c)[i] = -1;
            return 0;
        }
        if (v == c->memo) {
            COL_I32(c)[i] = c->memo_code;
            return 0;
        }
        if (PyUnicode_CheckExact(v)) {
            PyObject *code;
            long k;
            if (same_str(v, c->memo)) { /* an equal str: the same code (as the dict gives) */
                COL_I32(c)[i] = c->memo_code;
                return 0;
            }
            if (v == c->memo2 || same_str(v, c->memo2)) /* swap the two memos */
                return memo_swap(c, i);
            code = PyDict_GetItemWithError(c->index, v);
            if (code) {
                k = PyLong_AsLong(code);
            }
            else if (PyErr_Occurred())
                return -1;
            else {
                k = (long)PyList_GET_SIZE(c->values);
                if (k >= INT32_MAX)
                    goto fallback;
                if (!(code = PyLong_FromLong(k)))
                    return -1;
                if (PyDict_SetItem(c->index, v, code) < 0 || PyList_Append(c->values, v) < 0) {
                    Py_DECREF(code);
                    return -1;
                }
                Py_DECREF(code);
            }
            COL_I32(c)[i] = (int32_t)k;
            Py_XSETREF(c->memo2, c->memo);
            c->memo2_code = c->memo_code;
            c->memo = Py_NewRef(v);
            c->memo_code = (int32_t)k;
            return 0;
        }
        break;
    case 'i':
    case 's':
        if (c->kind == 's' && v == Py_None) {
            COL_I64(c)[i] = 0;
            return 0;
        }
        if (PyLong_CheckExact(v)) {
            x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (x == -1 && PyErr_Occurred())
                return -1;
            if (!overflow) {
                COL_I64(c)[i] = x;
                return 0;
            }
        }
        break;
    default: /* 'd', 'e' */
        if (c->kind == 'e' && v == Py_None) {
            COL_F64(c)[i] = Py_NAN;
            return 0;
        }
        if (PyFloat_CheckExact(v)) {
            COL_F64(c)[i] = PyFloat_AS_DOUBLE(v);
            return 0;
        }
    }
fallback:
    if (col_to_objects(c, i) < 0)
        return -1;
    return PyList_Append(c->objs, v);
}

/* put_obj_any, inline where it is the object put last in a column of strings (most rows of
 * a dense log: a line's prefix, pattern, label) */
static inline int
put_obj(Table *T, Col *c, Py_ssize_t i, PyObject *v)
{
    if (c->objs == NULL) {
        if (v == c->memo) { /* memo: only 'c' columns, which have no nulls */
            COL_I32(c)[i] = c->memo_code;
            return 0;
        }
        if (v == c->memo2) /* two names alternate */
            return memo_swap(c, i);
        if (c->kind == 'e') { /* an epoch: a float, or None when not given */
            if (v == Py_None) {
                COL_NULL(c)[i] = 1;
                COL_F64(c)[i] = Py_NAN;
                return 0;
            }
            if (PyFloat_CheckExact(v)) {
                COL_NULL(c)[i] = 0;
                COL_F64(c)[i] = PyFloat_AS_DOUBLE(v);
                return 0;
            }
        }
    }
    return put_obj_any(T, c, i, v);
}

static inline int
put_i64(Table *T, Col *c, Py_ssize_t i, long long x)
{
    PyObject *v;
    int r;

    if (!c->objs && (c->kind == 'i' || c->kind == 's')) {
        COL_I64(c)[i] = x;
        if (c->nulls)
            COL_NULL(c)[i] = 0;
        return 0;
    }
    if (!(v = PyLong_FromLongLong(x)))
        return -1;
    r = put_obj(T, c, i, v);
    Py_DECREF(v);
    return r;
}

static inline int
put_f64(Table *T, Col *c, Py_ssize_t i, double x)
{
    PyObject *v;
    int r;

    if (!c->objs && (c->kind == 'd' || c->kind == 'e')) {
        COL_F64(c)[i] = x;
        if (c->nulls)
            COL_NULL(c)[i] = 0;
        return 0;
    }
    if (!(v = PyFloat_FromDouble(x)))
        return -1;
    r = put_obj(T, c, i, v);
    Py_DECREF(v);
    return r;
}

static int
Table_init(Table *T, PyObject *args, PyObject *kwds)
{
    const char *kinds;
    Py_ssize_t len, k;

    if (!PyArg_ParseTuple(args, "s#:Table", &kinds, &len))
        return -1;
    if (len < 1 || len > MAX_COLS) {
        PyErr_SetString(PyExc_ValueError, "Table(kinds): 1 to 16 columns");
        return -1;
    }
    for (k = 0; k < T->ncols; k++)
        col_clear(&T->cols[k]);
    for (k = 0; k < len; k++) {
        if (!strchr("cidse", kinds[k]) || kinds[k] == '\0') {
            PyErr_Format(PyExc_ValueError, "Table(kinds): unknown kind %c", kinds[k]);
            return -1;
        }
        T->cols[k].kind = kinds[k];
    }
    T->ncols = (int)len;
    return table_reset(T);
}

static int
Table_traverse(Table *T, visitproc visit, void *arg)
{
    int k;

    for (k = 0; k < T->ncols; k++) {
        Py_VISIT(T->cols[k].index);
        Py_VISIT(T->cols[k].values);
        Py_VISIT(T->cols[k].memo);
        Py_VISIT(T->cols[k].memo2);
        Py_VISIT(T->cols[k].objs);
    }
    return 0;
}

static int
Table_clear(Table *T)
{
    int k;

    for (k = 0; k < T->ncols; k++)
        col_clear(&T->cols[k]);
    T->n = T->cap = 0;
    return 0;
}

static void
Table_dealloc(Table *T)
{
    PyObject_GC_UnTrack(T);
    Table_clear(T);
    Py_TYPE(T)->tp_free((PyObject *)T);
}

static Py_ssize_t
Table_len(Table *T)
{
    return T->n;
}

/* append(row): a tuple of one value per column */
static PyObject *
Table_append(Table *T, PyObject *row)
{
    Py_ssize_t i;
    int k;

    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != T->ncols) {
        PyErr_Format(PyExc_TypeError, "Table.append: a tuple of %d values", T->ncols);
        return NULL;
    }
    if ((i = table_room(T)) < 0)
        return NULL;
    for (k = 0; k < T->ncols; k++) {
        if (put_obj(T, &T->cols[k], i, PyTuple_GET_ITEM(row, k)) < 0)
            return NULL;
    }
    T->n++;
    Py_RETURN_NONE;
}

/* rows(): the rows as a list of tuples (what a list would hold) */
static PyObject *
Table_rows(Table *T, PyObject *unused)
{
    PyObject *out = PyList_New(T->n), *row, *v;
    Py_ssize_t i;
    int k;

    if (!out)
        return NULL;
    for (i = 0; i < T->n; i++) {
        if (!(row = PyTuple_New(T->ncols))) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, row);
        for (k = 0; k < T->ncols; k++) {
            if (!(v = col_value(&T->cols[k], i))) {
                Py_DECREF(out);
                return NULL;
            }
            PyTuple_SET_ITEM(row, k, v);
        }
    }
    return out;
}

/* take(): the columns, and the table is empty again. Each column is (kind, data, nulls,
 * values): kind 'o' with data a list of objects (a column that fell back), else data is a
 * bytearray of int32 codes ('c'), int64 ('i', 's') or double ('d', 'e'), one per row; nulls
 * a bytearray of 0/1 per row ('s', 'e') or None; values the list of distinct strings the
 * codes of a 'c' column point into, else None. */
static PyObject *
Table_take(Table *T, PyObject *unused)
{
    PyObject *out = PyList_New(T->ncols), *item;
    int k;

    if (!out)
        return NULL;
    for (k = 0; k < T->ncols; k++) {
        Col *c = &T->cols[k];
        if (c->objs)
            item = Py_BuildValue("(sOOO)", "o", c->objs, Py_None, Py_None);
        else {
            if (PyByteArray_Resize(c->data, T->n * width(c->kind)) < 0 ||
                (c->nulls && PyByteArray_Resize(c->nulls, T->n) < 0)) {
                Py_DECREF(out);
                return NULL;
            }
            item = Py_BuildValue("(COOO)", c->kind, c->data, c->nulls ? c->nulls : Py_None,
                                 c->values ? c->values : Py_None);
        }
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, item);
    }
    if (table_reset(T) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyMethodDef Table_methods[] = {
    {"append", (PyCFunction)Table_append, METH_O, "append(row): add one row (a tuple)."},
    {"rows", (PyCFunction)Table_rows, METH_NOARGS, "rows(): the rows as tuples."},
    {"take", (PyCFunction)Table_take, METH_NOARGS,
     "take(): the columns [(kind, data, nulls, values)], emptying the table."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods Table_as_sequence = {
    .sq_length = (lenfunc)Table_len,
};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dptrace.formats.trainlog._tqdm_fast.Table",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Table(kinds): rows kept as columns (see _tqdm_fast.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Table_init,
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_traverse = (traverseproc)Table_traverse,
    .tp_clear = (inquiry)Table_clear,
    .tp_methods = Table_methods,
    .tp_as_sequence = &Table_as_sequence,
};

/* --- the rows of one line, staged until the whole line is read ----------------------------- */

/* one update: its rows are written when the whole line has been read (a decline adds none) */
typedef struct {
    PyObject *info, *kind, *step_obj; /* strong; step_obj NULL when the step is in step */
    long long step;
    double value;
    Py_ssize_t seg, pairs_end; /* its postfix pairs: pairs[previous update's pairs_end:pairs_end] */
} Upd;

typedef struct {
    PyObject *name; /* strong */
    double value;
} Pair;

typedef struct {
    Upd *upd;
    Pair *pairs;
    Py_ssize_t nupd, capupd, npairs, cappairs;
} Stage;

typedef struct {
    PyObject *text, *line_prefix, *line;
    Text t;
    Py_ssize_t start;
    /* from cr_bytes(): the text holds no Unicode number (checked), and where its '\r' are
     * (ncr of them in cr; NULL: read_line finds them) */
    int checked;
    Py_ssize_t *cr, ncr;
    Stage stage; /* the rows read so far */
} Line;

/* whether text[s:e] == str */
static int
span_eq(const Text *t, Py_ssize_t s, Py_ssize_t e, PyObject *str)
{
    int kind;
    const void *data;
    Py_ssize_t i;

    if (str == NULL || PyUnicode_GET_LENGTH(str) != e - s)
        return 0;
    kind = PyUnicode_KIND(str);
    data = PyUnicode_DATA(str);
    for (i = 0; i < e - s; i++) {
        if (PyUnicode_READ(kind, data, i) != CH(t, s + i))
            return 0;
    }
    return 1;
}

/* _UNIT[sig] (a new reference), calling rules.rate_unit on a miss; NULL with *ret set: 0 decline,
 * -1 error */
static PyObject *
unit_of(Line *L, const Match *m, int *ret)
{
    PyObject *scale = NULL, *unit = NULL, *per = NULL, *sig = NULL, *kind = NULL, *made;
    const Text *t = &L->t;

    *ret = -1;
    if (span_eq(t, m->scale_s, m->scale_e, memo_scale) &&
        span_eq(t, m->unit_s, m->unit_e, memo_unit) && span_eq(t, m->per_s, m->per_e, memo_per))
        return Py_NewRef(memo_kind);
    if (!(scale = PyUnicode_Substring(L->text, m->scale_s, m->scale_e)) ||
        !(unit = PyUnicode_Substring(L->text, m->unit_s, m->unit_e)) ||
        !(per = PyUnicode_Substring(L->text, m->per_s, m->per_e)) ||
        !(sig = PyTuple_Pack(3, scale, unit, per)))
        goto done;
    kind = PyDict_GetItemWithError(unit_cache, sig);
    if (kind != NULL)
        Py_INCREF(kind);
    else if (PyErr_Occurred())
        goto done;
    else {
        /* _UNIT.setdefault(sig, rules.rate_unit(*sig)) */
        if (!(made = PyObject_CallFunctionObjArgs(unit_kind, scale, unit, per, NULL))) {
            *ret = callback_failed();
            goto done;
        }
        kind = PyDict_SetDefault(unit_cache, sig, made);
        Py_DECREF(made);
        if (kind == NULL)
            goto done;
        Py_INCREF(kind);
    }
    if (kind != Py_None &&
        (!PyTuple_CheckExact(kind) || PyTuple_GET_SIZE(kind) != 3 ||
         !PyFloat_CheckExact(PyTuple_GET_ITEM(kind, 1)) ||
         (PyTuple_GET_ITEM(kind, 2) != Py_True && PyTuple_GET_ITEM(kind, 2) != Py_False))) {
        *ret = 0;
        Py_CLEAR(kind);
        goto done;
    }
    Py_XSETREF(memo_scale, Py_NewRef(scale));
    Py_XSETREF(memo_unit, Py_NewRef(unit));
    Py_XSETREF(memo_per, Py_NewRef(per));
    Py_XSETREF(memo_kind, Py_NewRef(kind));
done:
    Py_XDECREF(scale);
    Py_XDECREF(unit);
    Py_XDECREF(per);
    Py_XDECREF(sig);
    return kind;
}

/* What _PRE held for the pres seen last, by a hash of their text (FNV-1a of the code points):
 * a pre changes with every update (its percentage and bar), and a look-up in _PRE (tens of
 * thousands of pres in a dense log) first makes a str of it, then misses the processor's
 * caches; this table is small and needs no str. Each slot keeps a pre and its info (strong
 * references), replaced by the next pre of its hash; _pre_info is a pure function of the pre,
 * so the info is what _PRE has or would recompute (see memo_pre). Cleared by configure(). */
#define PRE_SLOTS 8192
static struct {
    Py_uhash_t hash;
    PyObject *pre, *info;
} pre_slots[PRE_SLOTS];

static Py_uhash_t
span_hash(const Text *t, Py_ssize_t s, Py_ssize_t e)
{
    Py_uhash_t h = (Py_uhash_t)14695981039346656037ULL;
    Py_ssize_t i;

    for (i = s; i < e; i++) {
        h ^= CH(t, i);
        h *= (Py_uhash_t)1099511628211ULL;
    }
    return h;
}

static void
pre_slots_clear(void)
{
    int k;

    for (k = 0; k < PRE_SLOTS; k++) {
        Py_CLEAR(pre_slots[k].pre);
        Py_CLEAR(pre_slots[k].info);
    }
}

/* The key under which a pre's info is remembered: the pre itself, or, for a pre whose first
 * character is not one general._PREFIX_START holds (" \t[" and 0-9), the pre cut as
 * rules._strip_bar cuts it (before its last "%|" and the digits before that): _pre_info then
 * gives (None, *rules._desc_label(pre)) = (None, *rules._bar_label(_strip_bar(pre))), a pure
 * function of that cut, so pres that differ only in their percentage and bar (all the updates
 * of a bar) share one key. No key of one kind is a key of the other: a cut that is not empty
 * starts with the pre's first character. (The line has no Unicode digit: read_line declines
 * those, so str.isdigit is 0-9 here.) Returns the end of the key, which starts at s. */
static Py_ssize_t
pre_key_end(const Text *t, Py_ssize_t s, Py_ssize_t e)
{
    Py_UCS4 c0;
    Py_ssize_t k;

    if (s < e && ((c0 = CH(t, s)) == ' ' || c0 == '\t' || c0 == '[' || IS_DIGIT(c0)))
        return e;
    for (k = e - 2; k >= s; k--) {
        if (CH(t, k) == '%' && CH(t, k + 1) == '|') {
            while (k > s && IS_DIGIT(CH(t, k - 1)))
                k--;
            return k;
        }
    }
    return e;
}

/* _PRE.get(pre) or _pre_info(pre) (a new reference), or what they gave for a pre of the same
 * key (pre_key_end); NULL with *ret set as unit_of */
static PyObject *
info_of(Line *L, Py_ssize_t s, Py_ssize_t e, int *ret)
{
    PyObject *pre, *key, *info;
    Py_uhash_t hash;
    Py_ssize_t ke = pre_key_end(&L->t, s, e);
    int slot;

    *ret = -1;
    if (span_eq(&L->t, s, ke, memo_pre))
        return Py_NewRef(memo_info);
    hash = span_hash(&L->t, s, ke);
    slot = (int)(hash & (PRE_SLOTS - 1));
    if (pre_slots[slot].pre && pre_slots[slot].hash == hash &&
        span_eq(&L->t, s, ke, pre_slots[slot].pre)) {
        Py_XSETREF(memo_pre, Py_NewRef(pre_slots[slot].pre));
        Py_XSETREF(memo_info, Py_NewRef(pre_slots[slot].info));
        return Py_NewRef(memo_info);
    }
    if (!(pre = PyUnicode_Substring(L->text, s, e)))
        return NULL;
    info = PyDict_GetItemWithError(pre_cache, pre);
    if (info != NULL)
        Py_INCREF(info);
    else if (PyErr_Occurred())
        goto done;
    else if (!(info = PyObject_CallOneArg(pre_info, pre))) {
        *ret = callback_failed();
        goto done;
    }
    if (!PyTuple_CheckExact(info) || PyTuple_GET_SIZE(info) != 3 ||
        (ke != e && PyTuple_GET_ITEM(info, 0) != Py_None)) {
        *ret = 0;
        Py_CLEAR(info);
        goto done;
    }
    if (!(key = ke == e ? Py_NewRef(pre) : PyUnicode_Substring(L->text, s, ke))) {
        Py_CLEAR(info);
        goto done;
    }
    Py_XSETREF(memo_pre, Py_NewRef(key));
    Py_XSETREF(memo_info, Py_NewRef(info));
    pre_slots[slot].hash = hash;
    Py_XSETREF(pre_slots[slot].pre, key);
    Py_XSETREF(pre_slots[slot].info, Py_NewRef(info));
done:
    Py_DECREF(pre);
    return info;
}

/* A row holding only objects the garbage collector does not track (str, int, float, None)
 * cannot be in a reference cycle: untrack it now, as the collector itself would do at its
 * next pass (_PyTuple_MaybeUntrack), which spares it the work on ~10^5 young rows. */
static void
untrack_atomic(PyObject *row)
{
    Py_ssize_t i;

    for (i = 0; i < PyTuple_GET_SIZE(row); i++) {
        if (PyObject_IS_GC(PyTuple_GET_ITEM(row, i)))
            return;
    }
    PyObject_GC_UnTrack(row);
}

/* Append a new row (a new reference, or NULL after an error) to list and release it;
 * -1 on error. */
static int
append_row(PyObject *list, PyObject *row)
{
    int r;

    if (!row)
        return -1;
    r = PyList_Append(list, row);
    if (r == 0)
        untrack_atomic(row);
    Py_DECREF(row);
    return r;
}

static void
stage_free(Stage *S)
{
    Py_ssize_t i;

    for (i = 0; i < S->nupd; i++) {
        Py_XDECREF(S->upd[i].info);
        Py_XDECREF(S->upd[i].kind);
        Py_XDECREF(S->upd[i].step_obj);
    }
    for (i = 0; i < S->npairs; i++)
        Py_XDECREF(S->pairs[i].name);
    PyMem_Free(S->upd);
    PyMem_Free(S->pairs);
    memset(S, 0, sizeof(*S));
}

/* a new staged update (zeroed), NULL (MemoryError) on failure */
static Upd *
stage_update(Stage *S)
{
    Upd *u;

    if (S->nupd == S->capupd) {
        Py_ssize_t cap = S->capupd ? 2 * S->capupd : 16;
        Upd *more = PyMem_Realloc(S->upd, cap * sizeof(Upd));
        if (!more) {
            PyErr_NoMemory();
            return NULL;
        }
        S->upd = more;
        S->capupd = cap;
    }
    u = &S->upd[S->nupd++];
    memset(u, 0, sizeof(*u));
    u->pairs_end = S->npairs;
    return u;
}

/* stage a postfix pair (takes the reference to name); -1 on error */
static int
stage_pair(Stage *S, PyObject *name, double value)
{
    if (S->npairs == S->cappairs) {
        Py_ssize_t cap = S->cappairs ? 2 * S->cappairs : 32;
        Pair *more = PyMem_Realloc(S->pairs, cap * sizeof(Pair));
        if (!more) {
            Py_DECREF(name);
            PyErr_NoMemory();
            return -1;
        }
        S->pairs = more;
        S->cappairs = cap;
    }
    S->pairs[S->npairs].name = name;
    S->pairs[S->npairs].value = value;
    S->npairs++;
    S->upd[S->nupd - 1].pairs_end = S->npairs;
    return 0;
}

/* rules._snake of the last postfix keys seen: (key, name) pairs, replaced in turn */
#define SNAKES 32
static PyObject *snake_key[SNAKES], *snake_name[SNAKES];
static int snake_next;

/* rules._snake(text[s:e]) as a new reference, from the cache or the Python helper; NULL with
 * *ret set as unit_of */
static PyObject *
snake_of(Line *L, Py_ssize_t s, Py_ssize_t e, int *ret)
{
    PyObject *key, *name;
    int k;

    *ret = -1;
    for (k = 0; k < SNAKES; k++) {
        if (snake_key[k] && span_eq(&L->t, s, e, snake_key[k]))
            return Py_NewRef(snake_name[k]);
    }
    if (!(key = PyUnicode_Substring(L->text, s, e)))
        return NULL;
    if (!(name = PyObject_CallOneArg(snake, key))) {
        Py_DECREF(key);
        *ret = callback_failed();
        return NULL;
    }
    Py_XSETREF(snake_key[snake_next], key);
    Py_XSETREF(snake_name[snake_next], Py_NewRef(name));
    snake_next = (snake_next + 1) % SNAKES;
    return name;
}

static void
snakes_clear(void)
{
    int k;

    for (k = 0; k < SNAKES; k++) {
        Py_CLEAR(snake_key[k]);
        Py_CLEAR(snake_name[k]);
    }
    snake_next = 0;
}

#define IS_ALNUM_(c) (IS_WORD(c) || IS_DIGIT(c))

/* 10**k, each exactly a double */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* float() of a NUM (rules.NUM: [-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?) text[s:e] without
 * strtod when that is exact: its digits as an integer m <= 2**53 and a power of ten 10**k
 * with |k| <= 22 are both doubles, and one IEEE multiplication or division rounds their exact
 * product or quotient correctly, as float() does (Clinger's fast path). 1 (*v set), or 0:
 * not such a number. Only where doubles are evaluated as doubles (SSE2, not x87). */
static int
fast_float(const Text *t, Py_ssize_t s, Py_ssize_t e, double *v)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    Py_ssize_t i = s;
    unsigned long long m = 0;
    int neg = 0, point = 0, frac = 0, exp = 0, eneg = 0, edigits = 0, k;
    Py_UCS4 c;

    if (i < e && ((c = CH(t, i)) == '-' || c == '+')) {
        neg = c == '-';
        i++;
    }
    for (; i < e; i++) {
        c = CH(t, i);
        if (IS_DIGIT(c)) {
            m = m * 10 + (c - '0');
            if (m > (1ULL << 53))
                return 0;
            frac += point;
        }
        else if (c == '.' && !point)
            point = 1;
        else
            break;
    }
    if (i < e) {
        c = CH(t, i);
        if (c != 'e' && c != 'E')
            return 0;
        i++;
        if (i < e && ((c = CH(t, i)) == '-' || c == '+')) {
            eneg = c == '-';
            i++;
        }
        for (; i < e && IS_DIGIT(CH(t, i)); i++) {
            if (++edigits > 4)
                return 0;
            exp = exp * 10 + (int)(CH(t, i) - '0');
        }
        if (!edigits || i != e)
            return 0;
    }
    k = (eneg ? -exp : exp) - frac;
    if (k < -22 || k > 22)
        return 0;
    *v = k >= 0 ? (double)m * POW10[k] : (double)m / POW10[-k];
    if (neg)
        *v = -*v;
    return 1;
#else
    return 0;
#endif
}

/* float() of the ASCII text[s:e], as the rate: 1 (*v set), 0 decline, -1 error */
static int
ascii_float(const Text *t, Py_ssize_t s, Py_ssize_t e, double *v)
{
    char buf[301], *end;
    Py_ssize_t i, len = e - s;

    if (fast_float(t, s, e, v))
        return 1;
    if (len > 300)
        return 0;
    for (i = 0; i < len; i++)
        buf[i] = (char)CH(t, s + i);
    buf[len] = '\0';
    *v = PyOS_string_to_double(buf, &end, NULL);
    if (*v == -1.0 && PyErr_Occurred())
        return callback_failed();
    return end == buf + len;
}

/* The pairs of rules.postfix_pairs(text[s:e]) for an ASCII postfix: the matches of findall
 * with rules._POSTFIX = (\w+)=(NUM)(?=[,\]\s]|$), each as (rules._snake(key), float(value)).
 *
 * Without backtracking: \w+ must end right before the '=', and a shorter run leaves a word
 * character there, so a match starting in a run of word characters has the rest of the run
 * as its key, and fails or succeeds alike from every position of the run (the scan then
 * skips the run). NUM is as the rate's: any shorter end than the longest leaves a digit,
 * '.', 'e', 'E', '+' or '-' next, which the lookahead refuses, so only the longest can
 * match. 1 done, 0 decline, -1 error. */
static int
postfix_ascii(Line *L, Stage *S, Py_ssize_t s, Py_ssize_t e)
{
    const Text *t = &L->t;
    Py_ssize_t p = s, q, v, i;
    Py_UCS4 c;
    PyObject *name;
    double value;
    int r;

    while (p < e) {
        if (!IS_ALNUM_(CH(t, p))) {
            p++;
            continue;
        }
        for (q = p; q < e && IS_ALNUM_(CH(t, q)); q++)
            ;
        if (!(q < e && CH(t, q) == '=')) {
            p = q;
            continue;
        }
        /* NUM at q + 1, then the lookahead */
        i = v = q + 1;
        if (i < e && ((c = CH(t, i)) == '-' || c == '+'))
            i++;
        if (i < e && IS_DIGIT(CH(t, i))) {
            i = digits(t, i, e);
            if (i < e && CH(t, i) == '.')
                i = digits(t, i + 1, e);
        }
        else if (i + 1 < e && CH(t, i) == '.' && IS_DIGIT(CH(t, i + 1)))
            i = digits(t, i + 1, e);
        else {
            p = q;
            continue;
        }
        if (i < e && ((c = CH(t, i)) == 'e' || c == 'E')) {
            Py_ssize_t j = i + 1;
            if (j < e && ((c = CH(t, j)) == '-' || c == '+'))
                j++;
            if (j < e && IS_DIGIT(CH(t, j)))
                i = digits(t, j, e);
        }
        if (i < e && !((c = CH(t, i)) == ',' || c == ']' || Py_UNICODE_ISSPACE(c))) {
            p = q;
            continue;
        }
        if ((r = ascii_float(t, v, i, &value)) != 1)
            return r;
        if (!(name = snake_of(L, p, q, &r)))
            return r;
        if (stage_pair(S, name, value) < 0)
            return -1;
        p = i;
    }
    return 1;
}

/* the postfix text[s:e] (it holds a '='): in C when ASCII, else rules.postfix_pairs */
static int
postfix_rows(Line *L, Stage *S, Py_ssize_t s, Py_ssize_t e)
{
    PyObject *post, *pairs, *pair;
    Py_ssize_t i;
    int ret = -1;

    for (i = s; i < e && CH(&L->t, i) < 128; i++)
        ;
    if (i == e)
        return postfix_ascii(L, S, s, e);
    if (!(post = PyUnicode_Substring(L->text, s, e)))
        return -1;
    pairs = PyObject_CallOneArg(postfix, post);
    Py_DECREF(post);
    if (!pairs)
        return callback_failed();
    if (!PyList_CheckExact(pairs)) {
        ret = 0;
        goto done;
    }
    for (i = 0; i < PyList_GET_SIZE(pairs); i++) {
        pair = PyList_GET_ITEM(pairs, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyFloat_CheckExact(PyTuple_GET_ITEM(pair, 1))) {
            ret = 0;
            goto done;
        }
        if (stage_pair(S, Py_NewRef(PyTuple_GET_ITEM(pair, 0)),
                       PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(pair, 1))) < 0)
            goto done;
    }
    ret = 1;
done:
    Py_DECREF(pairs);
    return ret;
}

/* the rows of one update, staged in L->stage: 1 done, 0 decline, -1 error */
static int
update_rows(Line *L, Py_ssize_t s, const Match *m)
{
    PyObject *kind, *info = NULL, *count, *step = NULL;
    const Text *t = &L->t;
    Py_ssize_t i, len;
    int ret = -1, inverse;
    double v;
    long long n = 0;
    Upd *u;

    if (m->rate_s < 0) /* '?it/s' */
        return 1;
    if (!(kind = unit_of(L, m, &ret)))
        return ret;
    if (kind == Py_None) {
        ret = 1;
        goto fail;
    }
    inverse = PyTuple_GET_ITEM(kind, 2) == Py_True;

    /* float(rate): the same PyOS_string_to_double call as float() on this ASCII text */
    if ((ret = ascii_float(t, m->rate_s, m->rate_e, &v)) != 1)
        goto fail;
    ret = -1;
    if (inverse) {
        if (v == 0) {
            ret = 1;
            goto fail;
        }
        v = 1.0 / v;
    }
    else
        v *= PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(kind, 1));

    if (!(info = info_of(L, s, m->n_s, &ret)))
        goto fail;

    /* int(count) if count.isdigit() else rules._tqdm_count(count) */
    len = m->n_e - m->n_s;
    for (i = m->n_s; i < m->n_e && IS_DIGIT(CH(t, i)); i++)
        ;
    if (i == m->n_e) {
        if (len > 18) {
            ret = 0;
            goto fail;
        }
        for (i = m->n_s; i < m->n_e; i++)
            n = n * 10 + (CH(t, i) - '0');
    }
    else {
        if (!(count = PyUnicode_Substring(L->text, m->n_s, m->n_e)))
            goto fail;
        step = PyObject_CallOneArg(tqdm_count, count);
        Py_DECREF(count);
        if (!step) {
            ret = callback_failed();
            goto fail;
        }
        if (!PyLong_CheckExact(step)) {
            ret = 0;
            goto fail;
        }
    }
    if (!(u = stage_update(&L->stage)))
        goto fail;
    u->info = info;
    u->kind = kind;
    u->step_obj = step;
    u->step = n;
    u->value = v;
    u->seg = L->start + s;

    /* if "=" in post: its rows */
    for (i = m->post_s; i < m->post_e && CH(t, i) != '='; i++)
        ;
    if (i < m->post_e)
        return postfix_rows(L, &L->stage, m->post_s, m->post_e);
    return 1;
fail:
    Py_XDECREF(info);
    Py_XDECREF(step);
    Py_DECREF(kind);
    return ret;
}

/* the staged rows appended to the lists tp and tm as tuples: 0, or -1 on error */
static int
commit_lists(Line *L, PyObject *tp, PyObject *tm)
{
    Stage *S = &L->stage;
    Py_ssize_t k, j = 0;
    PyObject *seg = NULL, *value = NULL, *step = NULL, *prefix, *epoch, *val;
    int ret = -1;

    for (k = 0; k < S->nupd; k++) {
        Upd *u = &S->upd[k];
        prefix = PyTuple_GET_ITEM(u->info, 0);
        if (prefix == Py_None)
            prefix = L->line_prefix;
        epoch = PyTuple_GET_ITEM(u->info, 2);
        if (!(seg = PyLong_FromSsize_t(u->seg)) || !(value = PyFloat_FromDouble(u->value)) ||
            !(step = u->step_obj ? Py_NewRef(u->step_obj) : PyLong_FromLongLong(u->step)))
            goto done;
        if (append_row(tp, PyTuple_Pack(11, prefix, L->line, seg, s_tqdm, s_tqdm,
                                        PyTuple_GET_ITEM(u->kind, 0), value, s_instance, step,
                                        epoch, PyTuple_GET_ITEM(u->info, 1))) < 0)
            goto done;
        for (; j < u->pairs_end; j++) {
            if (!(val = PyFloat_FromDouble(S->pairs[j].value)))
                goto done;
            if (append_row(tm, PyTuple_Pack(8, prefix, L->line, seg, s_tqdm, S->pairs[j].name,
                                            val, step, epoch)) < 0) {
                Py_DECREF(val);
                goto done;
            }
            Py_DECREF(val);
        }
        Py_CLEAR(seg);
        Py_CLEAR(value);
        Py_CLEAR(step);
    }
    ret = 0;
done:
    Py_XDECREF(seg);
    Py_XDECREF(value);
    Py_XDECREF(step);
    return ret;
}

/* the staged rows written into the Tables tp (rules.TP_COLS) and tm (rules.TM_COLS), no
 * object made per row: 0, or -1 on error */
static int
commit_tables(Line *L, Table *tp, Table *tm)
{
    Stage *S = &L->stage;
    Py_ssize_t k, j = 0, i;
    PyObject *prefix, *epoch;
    Col *c;
    int overflow = 1;
    long long line = PyLong_CheckExact(L->line) ? PyLong_AsLongLongAndOverflow(L->line, &overflow)
                                                : 0;

    if (overflow == 0 && line == -1 && PyErr_Occurred())
        return -1;
    for (k = 0; k < S->nupd; k++) {
        Upd *u = &S->upd[k];
        prefix = PyTuple_GET_ITEM(u->info, 0);
        if (prefix == Py_None)
            prefix = L->line_prefix;
        epoch = PyTuple_GET_ITEM(u->info, 2);
        if ((i = table_room(tp)) < 0)
            return -1;
        c = tp->cols;
        if (put_obj(tp, &c[0], i, prefix) < 0 ||
            (overflow ? put_obj(tp, &c[1], i, L->line) : put_i64(tp, &c[1], i, line)) < 0 ||
            put_i64(tp, &c[2], i, u->seg) < 0 || put_obj(tp, &c[3], i, s_tqdm) < 0 ||
            put_obj(tp, &c[4], i, s_tqdm) < 0 ||
            put_obj(tp, &c[5], i, PyTuple_GET_ITEM(u->kind, 0)) < 0 ||
            put_f64(tp, &c[6], i, u->value) < 0 || put_obj(tp, &c[7], i, s_instance) < 0 ||
            (u->step_obj ? put_obj(tp, &c[8], i, u->step_obj) : put_i64(tp, &c[8], i, u->step))
                < 0 ||
            put_obj(tp, &c[9], i, epoch) < 0 ||
            put_obj(tp, &c[10], i, PyTuple_GET_ITEM(u->info, 1)) < 0)
            return -1;
        tp->n++;
        for (; j < u->pairs_end; j++) {
            if ((i = table_room(tm)) < 0)
                return -1;
            c = tm->cols;
            if (put_obj(tm, &c[0], i, prefix) < 0 ||
                (overflow ? put_obj(tm, &c[1], i, L->line) : put_i64(tm, &c[1], i, line)) < 0 ||
                put_i64(tm, &c[2], i, u->seg) < 0 || put_obj(tm, &c[3], i, s_tqdm) < 0 ||
                put_obj(tm, &c[4], i, S->pairs[j].name) < 0 ||
                put_f64(tm, &c[5], i, S->pairs[j].value) < 0 ||
                (u->step_obj ? put_obj(tm, &c[6], i, u->step_obj)
                             : put_i64(tm, &c[6], i, u->step)) < 0 ||
                put_obj(tm, &c[7], i, epoch) < 0)
                return -1;
            tm->n++;
        }
    }
    return 0;
}

/* 1 accepted, 0 declined, -1 error; the rows are staged in L->stage */
static int
read_line(Line *L, Py_ssize_t n)
{
    const Text *t = &L->t;
    Py_ssize_t s, e, i, k;
    Match m;
    int r;

    /* a Unicode digit or number anywhere: \d, isdigit, int() and float() see more than 0-9 */
    if (!L->checked && PyUnicode_MAX_CHAR_VALUE(L->text) > 127) {
        Py_UCS4 c, seen = 0; /* the last non-ASCII character found not numeric */
        for (i = 0; i < n; i++) {
            if ((c = CH(t, i)) > 127 && c != seen) {
                if (Py_UNICODE_ISNUMERIC(c) || Py_UNICODE_ISDIGIT(c) || Py_UNICODE_ISDECIMAL(c))
                    return 0;
                seen = c;
            }
        }
    }
    for (s = 0, k = 0; s <= n; s = e + 1, k++) {
        if (L->cr)
            e = k < L->ncr ? L->cr[k] : n;
        else
            for (e = s; e < n && CH(t, e) != '\r'; e++)
                ;
        if (e == s)
            continue;
        if (segment(t, s, e, &m)) {
            if ((r = update_rows(L, s, &m)) != 1)
                return r;
            continue;
        }
        /* not an update: allowed only as the first segment, without '[' or keywords */
        if (s != 0)
            return 0;
        for (i = s; i < e; i++) {
            if (CH(t, i) == '[')
                return 0;
        }
        {
            PyObject *head = PyUnicode_Substring(L->text, s, e), *found, *known;
            if (!head)
                return -1;
            /* the heads seen (a launcher prefix, mostly), remembered: whether they hold none */
            if (!(known = PyDict_GetItemWithError(head_cache, head)) && PyErr_Occurred()) {
                Py_DECREF(head);
                return -1;
            }
            if (known) {
                Py_DECREF(head);
                if (known != Py_True)
                    return 0;
                continue;
            }
            found = PyObject_CallOneArg(scan_text, head);
            if (!found) {
                Py_DECREF(head);
                return callback_failed();
            }
            r = found == Py_None;
            Py_DECREF(found);
            if (PyDict_GET_SIZE(head_cache) >= MAX_HEADS)
                PyDict_Clear(head_cache);
            if (PyDict_SetItem(head_cache, head, r ? Py_True : Py_False) < 0) {
                Py_DECREF(head);
                return -1;
            }
            Py_DECREF(head);
            if (!r)
                return 0;
        }
    }
    return 1;
}

/* trainlog._split_prefix(text)[0], a new reference (str or None), for a text in which
 * read_line() finds no Unicode number (it declines the others, so only 0-9 are digits):
 *
 *   _PREFIX = ^\s*(?:(?P<srun>\d{1,6}): |\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err|diag)>:
 *                   |\[rank(?P<grank>\d+)\](?::|\s)
 *                   |\[(?P<role>[A-Za-z_]+\d+)\]:|\[(?P<bare>\d{1,6})\]\s)
 *   label = srun or rank or grank or role or bare
 *
 * Without backtracking: \s* is followed by a digit or '[' (not spaces): maximal. srun: a
 * shorter \d{1,6} leaves a digit before ': ', so the run of digits must be 1-6 long. After
 * '[', a digit rules out role, and job's ',' and bare's ']' after the digits exclude each
 * other; \d+, [A-Za-z_]+ are followed by what they do not contain (',', ']', a digit):
 * maximal. \s is Py_UNICODE_ISSPACE, as in sre for str patterns. */
static PyObject *
split_prefix(PyObject *text, const Text *t, Py_ssize_t n)
{
    Py_ssize_t i = 0, a, b, d;

    while (i < n && Py_UNICODE_ISSPACE(CH(t, i)))
        i++;
    if (i < n && IS_DIGIT(CH(t, i))) { /* srun */
        a = i;
        i = digits(t, i, n);
        if (i - a <= 6 && i + 1 < n && CH(t, i) == ':' && CH(t, i + 1) == ' ')
            return PyUnicode_Substring(text, a, i);
        Py_RETURN_NONE;
    }
    if (!(i < n && CH(t, i) == '['))
        Py_RETURN_NONE;
    a = ++i;
    if (i < n && IS_DIGIT(CH(t, i))) {
        b = digits(t, i, n);
        if (b < n && CH(t, b) == ',') { /* job, rank */
            static const char *const tails[] = {"out>:", "err>:", "diag>:"};
            int k;
            Py_ssize_t j, m;
            if (!(b + 1 < n && IS_DIGIT(CH(t, b + 1))))
                Py_RETURN_NONE;
            d = digits(t, b + 1, n);
            if (!(d + 4 < n && CH(t, d) == ']' && CH(t, d + 1) == '<' && CH(t, d + 2) == 's' &&
                  CH(t, d + 3) == 't' && CH(t, d + 4) == 'd'))
                Py_RETURN_NONE;
            for (k = 0; k < 3; k++) {
                m = (Py_ssize_t)strlen(tails[k]);
                for (j = 0; j < m && d + 5 + j < n && CH(t, d + 5 + j) == (Py_UCS4)tails[k][j];
                     j++)
                    ;
                if (j == m)
                    return PyUnicode_Substring(text, b + 1, d);
            }
            Py_RETURN_NONE;
        }
        if (b - a <= 6 && b + 1 < n && CH(t, b) == ']' && Py_UNICODE_ISSPACE(CH(t, b + 1)))
            return PyUnicode_Substring(text, a, b); /* bare */
        Py_RETURN_NONE;
    }
    for (b = i; b < n && IS_WORD(CH(t, b)); b++) /* grank, role */
        ;
    d = digits(t, b, n);
    if (b - i == 4 && CH(t, i) == 'r' && CH(t, i + 1) == 'a' && CH(t, i + 2) == 'n' &&
        CH(t, i + 3) == 'k' && d > b && d + 1 < n && CH(t, d) == ']' &&
        (CH(t, d + 1) == ':' || Py_UNICODE_ISSPACE(CH(t, d + 1))))
        return PyUnicode_Substring(text, b, d); /* [rank3]: [rank3] -> "3" */
    if (b > i && d > b && d + 1 < n && CH(t, d) == ']' && CH(t, d + 1) == ':')
        return PyUnicode_Substring(text, a, d);
    Py_RETURN_NONE;
}

/* reads L->text (set, ready); the entry points below check the arguments. The rows go to
 * rows.tp and rows.tm: Tables (rules.TP_COLS, rules.TM_COLS) or lists of tuples. */
static PyObject *
run_line(Line *L, PyObject *rows)
{
    PyObject *tp = NULL, *tm = NULL, *result = NULL;
    Py_ssize_t n;
    int r;

    L->t.kind = PyUnicode_KIND(L->text);
    L->t.data = PyUnicode_DATA(L->text);
    n = PyUnicode_GET_LENGTH(L->text);
    if (L->line_prefix == NULL && !(L->line_prefix = split_prefix(L->text, &L->t, n)))
        return NULL;
    memset(&L->stage, 0, sizeof(L->stage));
    r = read_line(L, n);
    if (r < 0)
        goto done;
    if (r == 0) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    if (!(tp = PyObject_GetAttr(rows, s_tp)) || !(tm = PyObject_GetAttr(rows, s_tm)))
        goto done;
    if (Py_IS_TYPE(tp, &TableType) && Py_IS_TYPE(tm, &TableType) &&
        ((Table *)tp)->ncols == 11 && ((Table *)tm)->ncols == 8)
        r = commit_tables(L, (Table *)tp, (Table *)tm);
    else if (PyList_CheckExact(tp) && PyList_CheckExact(tm))
        r = commit_lists(L, tp, tm);
    else {
        result = Py_NewRef(Py_False);
        goto done;
    }
    if (r == 0)
        result = Py_NewRef(Py_True);
done:
    stage_free(&L->stage);
    Py_XDECREF(tp);
    Py_XDECREF(tm);
    return result;
}

static int
line_args(Line *L, PyObject *const *args)
{
    if (pre_cache == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_tqdm_fast.configure() was not called");
        return -1;
    }
    if (!PyLong_CheckExact(args[3]))
        return 0;
    L->line = args[2];
    L->checked = 0;
    L->cr = NULL;
    L->ncr = 0;
    L->start = PyLong_AsSsize_t(args[3]);
    if (L->start == -1 && PyErr_Occurred())
        return -1;
    return 1;
}

static PyObject *
tqdm_updates(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Line L;
    int r;

    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "tqdm_updates(text, line_prefix, line, start, rows)");
        return NULL;
    }
    if ((r = line_args(&L, args)) <= 0)
        return r < 0 ? NULL : Py_NewRef(Py_False);
    L.text = args[0];
    L.line_prefix = args[1];
    if (!PyUnicode_CheckExact(L.text))
        Py_RETURN_FALSE;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(L.text) < 0)
        return NULL;
#endif
    return run_line(&L, args[4]);
}

/* cr_line(raw, whole_start, line, start, rows): the fast path of _Scanner._cr_line for the
 * bytes of a line: as
 *     text = raw.decode("utf-8"); line_prefix = _split_prefix(text)[0] if whole_start else None
 *     "<std" not in text and _tqdm_updates(text, line_prefix, line, start, rows)
 * declining (False, nothing added) when that would be False, and also for bytes that are not
 * UTF-8 or contain ESC (the scanner's _decode then records the bad bytes / strips ANSI). */
#define CR_STACK 64

/* the bytes cr_bytes() looks at one by one: '\r', ESC, '<' and every byte of 0x80 or more
 * (set by the module's init) */
static unsigned char CR_SPECIAL[256];

/* the first index from i (at most n) of a byte of CR_SPECIAL: sixteen bytes at a time where
 * SSE2 is there (every x86-64) */
static inline Py_ssize_t
plain_run(const unsigned char *p, Py_ssize_t i, Py_ssize_t n)
{
#if defined(__SSE2__) && defined(__GNUC__)
    const __m128i cr = _mm_set1_epi8('\r'), esc = _mm_set1_epi8(0x1b), lt = _mm_set1_epi8('<');
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(v, _mm_cmpeq_epi8(v, cr)),
                                               _mm_or_si128(_mm_cmpeq_epi8(v, esc),
                                                            _mm_cmpeq_epi8(v, lt))));
        if (m)
            return i + __builtin_ctz((unsigned)m);
        i += 16;
    }
#endif
    while (i < n && !CR_SPECIAL[p[i]])
        i++;
    return i;
}

/* The UTF-8 sequence at p[i] (i < n, p[i] >= 0x80) as Python's strict decoder takes it
 * (RFC 3629): its length, 2 to 4, with *u its character; 0 when it is not one (a stray
 * continuation byte, a sequence cut short, an overlong form, a surrogate, beyond U+10FFFF) */
static inline int
utf8_char(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, Py_UCS4 *u)
{
    unsigned char c = p[i], lo = 0x80, hi = 0xbf;
    int len, k;

    if (c < 0xc2)
        return 0;
    if (c < 0xe0) {
        len = 2;
        *u = c & 0x1f;
    }
    else if (c < 0xf0) {
        len = 3;
        *u = c & 0x0f;
        if (c == 0xe0)
            lo = 0xa0; /* overlong below */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates above */
    }
    else if (c < 0xf5) {
        len = 4;
        *u = c & 0x07;
        if (c == 0xf0)
            lo = 0x90; /* overlong below */
        else if (c == 0xf4)
            hi = 0x8f; /* beyond U+10FFFF above */
    }
    else
        return 0;
    if (i + len > n)
        return 0;
    for (k = 1; k < len; k++) {
        unsigned char b = p[i + k];
        if (b < lo || b > hi)
            return 0;
        *u = (*u << 6) | (b & 0x3f);
        lo = 0x80;
        hi = 0xbf;
    }
    return len;
}

/* whether u is a Unicode digit or number (read_line declines those: \d, isdigit, int() and
 * float() see more than 0-9); the box drawing, block and shape characters of bars
 * (U+2500-U+25FF) hold none */
static inline int
numeric_char(Py_UCS4 u)
{
    if (u >= 0x2500 && u <= 0x25ff)
        return 0;
    return Py_UNICODE_ISNUMERIC(u) || Py_UNICODE_ISDIGIT(u) || Py_UNICODE_ISDECIMAL(u);
}

/* append x to the array *a (of *len, room for *cap; a stack array at first, else PyMem);
 * -1 when out of memory */
static int
push_index(Py_ssize_t **a, Py_ssize_t *len, Py_ssize_t *cap, Py_ssize_t *stack, Py_ssize_t x)
{
    if (*len == *cap) {
        Py_ssize_t *more = PyMem_Malloc(2 * *cap * sizeof(Py_ssize_t));
        if (!more)
            return -1;
        memcpy(more, *a, *len * sizeof(Py_ssize_t));
        if (*a != stack)
            PyMem_Free(*a);
        *a = more;
        *cap *= 2;
    }
    (*a)[(*len)++] = x;
    return 0;
}

/* The str of the UTF-8 bytes p[0:n], which hold chars characters, at most maxchar, the
 * non-ASCII ones starting at the byte indices wide[0:nwide] (all checked by utf8_char):
 * what PyUnicode_DecodeUTF8 makes of them, without reading them again to find out */
static PyObject *
text_of(const unsigned char *p, Py_ssize_t n, Py_ssize_t chars, Py_UCS4 maxchar,
        const Py_ssize_t *wide, Py_ssize_t nwide)
{
    PyObject *text = PyUnicode_New(chars, maxchar);
    Py_ssize_t b = 0, d = 0, k, j;
    int kind;
    void *data;

    if (!text)
        return NULL;
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    for (k = 0;; k++) {
        Py_ssize_t e = k < nwide ? wide[k] : n;
        Py_UCS4 u = 0;
        int len;
        switch (kind) { /* the ASCII bytes p[b:e] */
        case PyUnicode_1BYTE_KIND:
            memcpy((Py_UCS1 *)data + d, p + b, (size_t)(e - b));
            break;
        case PyUnicode_2BYTE_KIND:
            for (j = b; j < e; j++)
                ((Py_UCS2 *)data)[d + j - b] = p[j];
            break;
        default:
            for (j = b; j < e; j++)
                ((Py_UCS4 *)data)[d + j - b] = p[j];
        }
        d += e - b;
        if (k == nwide)
            break;
        len = utf8_char(p, e, n, &u);
        PyUnicode_WRITE(kind, data, d, u);
        d++;
        b = e + len;
    }
    assert(d == chars);
    return text;
}

/* the bytes p[0:n] of a line as cr_line() reads them: 1 read, 0 declined, -1 error */
static int
cr_bytes(const char *p, Py_ssize_t n, PyObject *whole_start, PyObject *line, Py_ssize_t start,
         PyObject *rows)
{
    const unsigned char *u8 = (const unsigned char *)p;
    PyObject *result;
    Py_ssize_t i;
    Line L;
    int r = 0;

    Py_ssize_t chars = 0, crs[CR_STACK], *cr = crs, ncr = 0, cap = CR_STACK;
    Py_ssize_t wides[CR_STACK], *wide = wides, nwide = 0, wcap = CR_STACK;
    Py_UCS4 seen = 0, maxchar = 127; /* seen: the last non-ASCII character found not numeric */

    /* One pass over the bytes: "<std" and ESC (ASCII: in the UTF-8 bytes iff in the text)
     * decline the line; the '\r' are noted by their index in the text; every non-ASCII
     * character is decoded, checked for the Unicode numbers read_line declines, and its
     * index noted for text_of; a sequence that is not UTF-8 declines (the scanner's _decode
     * then records the bad bytes) */
    for (i = 0; i < n; i++) {
        unsigned char c;
        Py_ssize_t plain = i;
        i = plain_run(u8, i, n); /* ASCII but '\r', ESC and '<' */
        chars += i - plain;
        if (i == n)
            break;
        c = u8[i];
        if (c < 0x80) {
            if (c == '\r') {
                if (push_index(&cr, &ncr, &cap, crs, chars) < 0)
                    goto nomem;
            }
            else if (c == 0x1b || (c == '<' && i + 3 < n && p[i + 1] == 's' && p[i + 2] == 't' &&
                                   p[i + 3] == 'd'))
                goto done;
        }
        else {
            Py_UCS4 u;
            int len = utf8_char(u8, i, n, &u);
            if (!len)
                goto done; /* not UTF-8 */
            if (u != seen) {
                if (numeric_char(u))
                    goto done;
                seen = u;
            }
            if (u > maxchar)
                maxchar = u;
            if (push_index(&wide, &nwide, &wcap, wides, i) < 0)
                goto nomem;
            i += len - 1;
        }
        chars++;
    }
    if (!(L.text = text_of(u8, n, chars, maxchar, wide, nwide))) {
        r = -1;
        goto done;
    }
    L.line = line;
    L.start = start;
    L.line_prefix = whole_start == Py_True ? NULL : Py_None; /* NULL: run_line finds it */
    L.checked = 1; /* the checks above hold for the text */
    L.cr = cr;
    L.ncr = ncr;
    result = run_line(&L, rows);
    if (whole_start == Py_True)
        Py_XDECREF(L.line_prefix);
    Py_DECREF(L.text);
    if (!result)
        r = -1;
    else {
        r = result == Py_True;
        Py_DECREF(result);
    }
    goto done;
nomem:
    PyErr_NoMemory();
    r = -1;
done:
    if (cr != crs)
        PyMem_Free(cr);
    if (wide != wides)
        PyMem_Free(wide);
    return r;
}

static PyObject *
cr_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Line L;
    int r;

    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "cr_line(raw, whole_start, line, start, rows)");
        return NULL;
    }
    if ((r = line_args(&L, args)) <= 0)
        return r < 0 ? NULL : Py_NewRef(Py_False);
    if (!PyBytes_CheckExact(args[0]) || (args[1] != Py_True && args[1] != Py_False))
        Py_RETURN_FALSE;
    r = cr_bytes(PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]), args[1], L.line,
                 L.start, args[4]);
    if (r < 0)
        return NULL;
    return Py_NewRef(r ? Py_True : Py_False);
}

/* line_prefix(text): trainlog._split_prefix(text)[0] for texts without Unicode numbers
 * (for the tests) */
static PyObject *
line_prefix(PyObject *self, PyObject *text)
{
    Text t;

    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "line_prefix(text: str)");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return NULL;
#endif
    t.kind = PyUnicode_KIND(text);
    t.data = PyUnicode_DATA(text);
    return split_prefix(text, &t, PyUnicode_GET_LENGTH(text));
}

/* --- scan(): the scanner's hot loop (general._Scanner.run), in C -----------------------------
 *
 *     configure_scan(match, anchor, window, max_segment, declines, samba_guard, loss_guard)
 *     scan(buf, pos, end, start, counted, line, rows) -> (hit, line, counted)
 *
 * The loop of _Scanner.run over buf[pos:end] (a range of the file without NUL bytes, starting
 * at a line start `start`): the next keyword from the very RE2 matcher the Python loop calls
 * (match(anchor, buf, pos, end), the SCAN pattern of trainlog/__init__.py), the newlines before
 * it (line numbers), the line around it; then
 *
 *  - a line with '\r' (tqdm updates): cr_line() on its bytes, as _Scanner._cr_line does first;
 *  - any other line: when it is printable ASCII (no byte outside 0x20-0x7e but '\t'), within
 *    max_segment bytes either side of the keyword, has no "<std" tag and none of `declines`
 *    (every guard of rules.SPECIFIC but sambaflow's, and generic_rate's "/s": general.py
 *    builds the list from rules), _recognise() could only run rules.sambaflow (when it holds
 *    samba_guard) and then rules.generic_loss (when it holds loss_guard): both in C below,
 *    giving the very rows.
 *
 * Anything else, and any line this code declines (a cr_line() decline, a line that does not
 * end with '\n' before `end`, a line longer than `window` either side of the keyword, numbers
 * of more than 18 digits), stops the loop: scan() returns that keyword's position `hit` with the
 * line number there and counted == hit, having added nothing for that line, and the Python
 * loop reads it as it always did and calls scan() again after it. hit is -1 when no keyword is
 * left; (line, counted) are then those of the last keyword, as in the Python loop.
 *
 * In the printable ASCII of a plain line, Python's \s is [ \t], \d is [0-9], \w is
 * [A-Za-z0-9_], IGNORECASE folds only A-Z: the regexes of rules are matched here without
 * backtracking, as argued at each function. */

static PyObject *s_samba_guard_obj, *s_loss_guard_obj;
static PyObject *scan_match, *scan_anchor, *scan_declines, *s_sambaflow, *s_e2e, *s_samples,
    *s_loss_line, *s_loop_time, *s_epochs, *s_global_steps;
static Py_ssize_t scan_window, scan_max_segment;
/* the keywords that are plain literals (configure_literals): a '\r' line right after the
 * last line read that holds one is the matcher's next hit (scan()) */
static PyObject *scan_literals;
static const char *samba_guard, *loss_guard;
static Py_ssize_t samba_guard_len, loss_guard_len;

/* newlines in p[0:n] (a zero byte test a word at a time, exact for every byte) */
static Py_ssize_t
count_newlines(const char *p, Py_ssize_t n)
{
    Py_ssize_t c = 0, i = 0;
    const uint64_t ones = 0x0101010101010101ULL, nl = ones * '\n', low = ones * 0x7f;
    const uint64_t high = ones << 7;
#if defined(__SSE2__) && defined(__GNUC__)
    /* sixteen bytes at a time: each '\n' subtracts -1 from its byte of a counter (at most
     * 255 rounds), whose bytes are then summed (psadbw) */
    const __m128i newline = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (i + 16 <= n) {
        __m128i acc = zero, sums;
        int k;
        for (k = 0; k < 255 && i + 16 <= n; k++, i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(
                _mm_loadu_si128((const __m128i *)(p + i)), newline));
        sums = _mm_sad_epu8(acc, zero);
        c += _mm_cvtsi128_si32(sums) + _mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
    }
#endif
    for (; i + 32 <= n; i += 32) {
        uint64_t x[4];
        int k;
        memcpy(x, p + i, 32);
        for (k = 0; k < 4; k++) {
            uint64_t y = x[k] ^ nl;
            /* one bit a zero byte, at its top; summed by a multiply (no popcnt needed) */
            c += (Py_ssize_t)((((~(((y & low) + low) | y) & high) >> 7) * ones) >> 56);
        }
    }
    for (; i < n; i++)
        c += p[i] == '\n';
    return c;
}

static int
has(const char *p, Py_ssize_t n, const char *needle, Py_ssize_t m)
{
    Py_ssize_t i;

    if (m == 0)
        return 1;
    for (i = 0; i + m <= n; i++) {
        const char *q = memchr(p + i, needle[0], (size_t)(n - m - i + 1));
        if (!q)
            return 0;
        i = q - p;
        if (memcmp(q, needle, (size_t)m) == 0)
            return 1;
    }
    return 0;
}

/* whether p[0:n] holds one of scan_literals (set) */
static int
has_literal(const char *p, Py_ssize_t n)
{
    Py_ssize_t k;

    for (k = 0; k < PyTuple_GET_SIZE(scan_literals); k++) {
        PyObject *w = PyTuple_GET_ITEM(scan_literals, k);
        if (has(p, n, PyBytes_AS_STRING(w), PyBytes_GET_SIZE(w)))
            return 1;
    }
    return 0;
}

/* The keywords' required literals (configure_required; general.required_literals): every
 * match of a keyword holds one, reached from the match's start without a '\n', so a line
 * holding none of them holds no keyword's start, and scan() passes over it without calling
 * the matcher. Kept by one pair of bytes of each (req_at: the pair least common in logs),
 * in chains of the literals of each pair (req_head: the first's index + 1, 0 none; 64 kB,
 * one load a byte of text). scan_required NULL: no filter (every line goes to the matcher). */
#define MAX_REQUIRED 255
static PyObject *scan_required;
static uint8_t req_head[65536], req_next[MAX_REQUIRED];
/* where in each literal its pair is: the pair of bytes least common in logs (see pair_at) */
static Py_ssize_t req_at[MAX_REQUIRED];

/* The bytes of log text from the most common on (the order of their counts in the dense
 * benchmark log and the real logs of the tests, the first 40), a byte not here rarer still */
static const char COMMON_BYTES[] = " 0e1as:ntr2.oil3pc45-9d6/7[8m]gh,uCN_bkI";

static int
rarity(unsigned char c)
{
    const char *at = c ? strchr(COMMON_BYTES, c) : NULL;
    return at ? (int)(at - COMMON_BYTES) : (int)sizeof(COMMON_BYTES);
}

/* the index in w[0:m] (m >= 2) of the pair of bytes that is likely rarest in text: fewer
 * lines to check for the whole literal */
static Py_ssize_t
pair_at(const unsigned char *w, Py_ssize_t m)
{
    Py_ssize_t j, best = 0;
    int score = -1;

    for (j = 0; j + 1 < m; j++) {
        int r = rarity(w[j]) + rarity(w[j + 1]);
        if (r > score) {
            score = r;
            best = j;
        }
    }
    return best;
}

/* whether p[0:n] holds one of the required literals (scan_required set) */
static int
has_required(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t i;

    for (i = 0; i + 1 < n; i++) {
        unsigned pair = p[i] | (unsigned)p[i + 1] << 8;
        int k;
        for (k = req_head[pair]; k; k = req_next[k - 1]) {
            PyObject *w = PyTuple_GET_ITEM(scan_required, k - 1);
            Py_ssize_t m = PyBytes_GET_SIZE(w), s = i - req_at[k - 1];
            if (s >= 0 && s + m <= n && memcmp(p + s, PyBytes_AS_STRING(w), (size_t)m) == 0)
                return 1;
        }
    }
    return 0;
}

#define A_WORD(c) (IS_ALNUM_(c))
#define A_LOWER(c) ((c) >= 'A' && (c) <= 'Z' ? (c) + 32 : (c))

/* the end of the longest NUM at i in p[0:n], or -1 (rules.NUM) */
static Py_ssize_t
num_end(const char *p, Py_ssize_t i, Py_ssize_t n)
{
    Py_ssize_t j;

    if (i < n && (p[i] == '-' || p[i] == '+'))
        i++;
    if (i < n && IS_DIGIT(p[i])) {
        while (i < n && IS_DIGIT(p[i]))
            i++;
        if (i < n && p[i] == '.')
            for (i++; i < n && IS_DIGIT(p[i]); i++)
                ;
    }
    else if (i + 1 < n && p[i] == '.' && IS_DIGIT(p[i + 1]))
        for (i++; i < n && IS_DIGIT(p[i]); i++)
            ;
    else
        return -1;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        j = i + 1;
        if (j < n && (p[j] == '-' || p[j] == '+'))
            j++;
        if (j < n && IS_DIGIT(p[j])) {
            for (; j < n && IS_DIGIT(p[j]); j++)
                ;
            i = j;
        }
    }
    return i;
}

static Py_ssize_t
blanks(const char *p, Py_ssize_t i, Py_ssize_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i;
}

static Py_ssize_t
lit(const char *p, Py_ssize_t i, Py_ssize_t n, const char *s)
{
    size_t m = strlen(s);

    return (size_t)(n - i) >= m && memcmp(p + i, s, m) == 0 ? i + (Py_ssize_t)m : -1;
}

/* float() of the ASCII p[s:e] (a NUM or digits): 1, 0 decline, -1 error */
static int
bytes_float(const char *p, Py_ssize_t s, Py_ssize_t e, double *v)
{
    Text t = {PyUnicode_1BYTE_KIND, p};

    return ascii_float(&t, s, e, v);
}

/* e2e samples_per_sec:\s*(?P<v>NUM) at i: the end of v (its start in *vs), or -1 */
static Py_ssize_t
samba_tail(const char *p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *vs)
{
    if ((i = lit(p, i, n, "e2e samples_per_sec:")) < 0)
        return -1;
    *vs = i = blanks(p, i, n);
    return num_end(p, i, n);
}

typedef struct {
    Py_ssize_t s, e;
} Span;

/* rules._SAMBA.search(p[b:n]): 1 found (v, and t/ep/steps when t.s >= 0), 0 not found.
 * At each start the optional group is tried first, then the tail alone: every part is
 * determined (NUM and \d+ are followed by what they cannot hold, \s* by a non-blank). */
static int
samba_search(const char *p, Py_ssize_t b, Py_ssize_t n, Span *v, Span *t, Span *ep, Span *st)
{
    Py_ssize_t i, j;

    for (i = b; i < n; i++) {
        if (p[i] == 'i' && (j = lit(p, i, n, "inner train loop time")) >= 0) {
            j = blanks(p, j, n);
            if (j < n && p[j] == ':') {
                t->s = j = blanks(p, j + 1, n);
                if ((j = t->e = num_end(p, j, n)) < 0)
                    goto tail;
                j = blanks(p, j, n);
                if ((j = lit(p, j, n, "for")) < 0)
                    goto tail;
                ep->s = j = blanks(p, j, n);
                while (j < n && IS_DIGIT(p[j]))
                    j++;
                if ((ep->e = j) == ep->s)
                    goto tail;
                j = blanks(p, j, n);
                if ((j = lit(p, j, n, "epoch")) < 0)
                    goto tail;
                if (j < n && p[j] == 's')
                    j++;
                if (!(j < n && p[j] == ','))
                    goto tail;
                j = blanks(p, j + 1, n);
                if ((j = lit(p, j, n, "number of global steps:")) < 0)
                    goto tail;
                st->s = j = blanks(p, j, n);
                while (j < n && IS_DIGIT(p[j]))
                    j++;
                if ((st->e = j) == st->s || !(j < n && p[j] == ','))
                    goto tail;
                j = blanks(p, j + 1, n);
                if ((v->e = samba_tail(p, j, n, &v->s)) >= 0)
                    return 1;
            }
        }
    tail:
        if (p[i] == 'e' && (v->e = samba_tail(p, i, n, &v->s)) >= 0) {
            t->s = -1;
            return 1;
        }
    }
    return 0;
}

/* case-insensitive ASCII word at i (w lowercase): its end or -1 */
static Py_ssize_t
ci_lit(const char *p, Py_ssize_t i, Py_ssize_t n, const char *w)
{
    Py_ssize_t k, m = (Py_ssize_t)strlen(w);

    if (n - i < m)
        return -1;
    for (k = 0; k < m; k++)
        if (A_LOWER(p[i + k]) != w[k])
            return -1;
    return i + m;
}

/* \b(?:step|iter(?:ation)?)\s*[=:#]?\s*(\d+) (epoch: \bepoch...) with IGNORECASE, search in
 * p[b:n] (b: the text's start for \b): 1 with the digits in *d, 0 none. Once the word is
 * there the rest is determined: "iteration" taken whole (giving "ation" back leaves 'a' where
 * blanks, [=:#] or a digit must come), \s* maximal (none of [=:#] or \d is blank). */
static int
hint_search(const char *p, Py_ssize_t b, Py_ssize_t n, int epoch, Span *d)
{
    Py_ssize_t i, j;

    for (i = b; i < n; i++) {
        if (i > b && A_WORD(p[i - 1]))
            continue;
        if (epoch)
            j = ci_lit(p, i, n, "epoch");
        else if ((j = ci_lit(p, i, n, "step")) < 0 && (j = ci_lit(p, i, n, "iter")) >= 0) {
            Py_ssize_t k = ci_lit(p, j, n, "ation");
            if (k >= 0)
                j = k;
        }
        if (j < 0)
            continue;
        j = blanks(p, j, n);
        if (j < n && (p[j] == '=' || p[j] == ':' || p[j] == '#'))
            j = blanks(p, j + 1, n);
        d->s = j;
        while (j < n && IS_DIGIT(p[j]))
            j++;
        if ((d->e = j) > d->s)
            return 1;
    }
    return 0;
}

#define MAX_LOSSES 32

/* rules._LOSS.findall(p[b:n]) = \b((?:[A-Za-z]{1,20}[ _])?[Ll]oss)\s*[:=]\s*(NUM)(?![\w.]):
 * the number of matches (<= MAX_LOSSES; -1: more, decline), keys and values in k[], v[].
 * At a start i (\b: a letter at i, no word character before): the optional group can only
 * be the whole run of letters at i (a shorter one leaves a letter where [ _] must be),
 * tried first, then left out; \s* maximal; NUM: only the longest can be followed by
 * (?![\w.]) (a shorter one leaves a digit, '.', 'e' or 'E' next), so it is that or none. */
static int
loss_findall(const char *p, Py_ssize_t b, Py_ssize_t n, Span *k, Span *v)
{
    Py_ssize_t i = b, j, r, c, found = 0;
    int opt;

    while (i < n) {
        if (!(IS_ALPHA(p[i]) && (i == b || !A_WORD(p[i - 1])))) {
            i++;
            continue;
        }
        for (r = i; r < n && IS_ALPHA(p[r]); r++)
            ;
        for (opt = 1; opt >= 0; opt--) {
            j = i;
            if (opt) {
                if (!(r - i <= 20 && r < n && (p[r] == ' ' || p[r] == '_')))
                    continue;
                j = r + 1;
            }
            if (!(n - j >= 4 && (p[j] == 'L' || p[j] == 'l') && p[j + 1] == 'o' &&
                  p[j + 2] == 's' && p[j + 3] == 's'))
                continue;
            j += 4;
            c = blanks(p, j, n);
            if (!(c < n && (p[c] == ':' || p[c] == '=')))
                continue;
            c = blanks(p, c + 1, n);
            r = num_end(p, c, n);
            if (r < 0 || (r < n && (A_WORD(p[r]) || p[r] == '.')))
                continue;
            if (found == MAX_LOSSES)
                return -1;
            k[found].s = i;
            k[found].e = j;
            v[found].s = c;
            v[found].e = r;
            found++;
            break;
        }
        if (opt >= 0)
            i = r; /* the end of the match */
        else
            i++;
    }
    return (int)found;
}

/* a row of 8 (tm) or 11 (tp) values into a Table or a list: 0, -1 error */
static int
put_row(PyObject *dest, PyObject **vals, int nvals)
{
    if (Py_IS_TYPE(dest, &TableType)) {
        Table *T = (Table *)dest;
        Py_ssize_t i;
        int k;
        if ((i = table_room(T)) < 0)
            return -1;
        for (k = 0; k < nvals; k++)
            if (put_obj(T, &T->cols[k], i, vals[k]) < 0)
                return -1;
        T->n++;
        return 0;
    }
    {
        PyObject *row = PyTuple_New(nvals);
        int k;
        if (row)
            for (k = 0; k < nvals; k++)
                PyTuple_SET_ITEM(row, k, Py_NewRef(vals[k]));
        return append_row(dest, row);
    }
}

static PyObject *
float_obj(const char *p, Span s, int *ret)
{
    double v;
    int r = bytes_float(p, s.s, s.e, &v);

    if (r != 1) {
        *ret = r;
        return NULL;
    }
    return PyFloat_FromDouble(v);
}

/* the rows of a plain line p[b:n] (the body: after the launcher prefix): 1 read (rows added,
 * maybe none), 0 decline (nothing added), -1 error */
static int
plain_line(const char *p, Py_ssize_t b, Py_ssize_t n, PyObject *prefix, PyObject *line,
           PyObject *seg, PyObject *tp, PyObject *tm)
{
    Span v = {0, 0}, t = {-1, -1}, ep = {0, 0}, st = {0, 0}, ks[MAX_LOSSES], vs[MAX_LOSSES], d;
    PyObject *objs[4 + 2 * MAX_LOSSES] = {NULL}, *step = NULL, *epoch = NULL;
    int ret = -1, nobj = 0, r, k, nloss;

    if (has(p + b, n - b, samba_guard, samba_guard_len) && samba_search(p, b, n, &v, &t, &ep, &st)) {
        if (!(objs[nobj++] = float_obj(p, v, &ret)))
            goto done;
        if (t.s >= 0) {
            if (!(objs[nobj++] = float_obj(p, t, &ret)) || !(objs[nobj++] = float_obj(p, ep, &ret)) ||
                !(objs[nobj++] = float_obj(p, st, &ret)))
                goto done;
        }
        {
            PyObject *row[11] = {prefix, line, seg, s_sambaflow, s_e2e, s_samples, objs[0],
                                 s_instance, Py_None, Py_None, Py_None};
            if (put_row(tp, row, 11) < 0)
                goto done;
        }
        if (t.s >= 0) {
            PyObject *names[3] = {s_loop_time, s_epochs, s_global_steps};
            for (k = 0; k < 3; k++) {
                PyObject *row[8] = {prefix, line, seg, s_sambaflow, names[k], objs[1 + k],
                                    Py_None, Py_None};
                if (put_row(tm, row, 8) < 0)
                    goto done;
            }
        }
        ret = 1;
        goto done;
    }
    if (!has(p + b, n - b, loss_guard, loss_guard_len)) {
        ret = 1;
        goto done;
    }
    if ((nloss = loss_findall(p, b, n, ks, vs)) <= 0) {
        ret = nloss < 0 ? 0 : 1;
        goto done;
    }
    /* first everything that may decline, then the rows */
    for (k = 0; k < nloss; k++) {
        if (!(objs[2 * k] = float_obj(p, vs[k], &ret)))
            goto done;
        {
            char name[32];
            Py_ssize_t i, m = 0;
            for (i = ks[k].s; i < ks[k].e; i++)
                name[m++] = p[i] == ' ' ? '_' : (char)A_LOWER(p[i]);
            if (!(objs[2 * k + 1] = PyUnicode_FromStringAndSize(name, m)))
                goto done;
        }
    }
    nobj = 2 * nloss;
    if (hint_search(p, b, n, 0, &d)) {
        if (d.e - d.s > 18) {
            ret = 0;
            goto done;
        }
        {
            long long x = 0;
            Py_ssize_t i;
            for (i = d.s; i < d.e; i++)
                x = x * 10 + (p[i] - '0');
            if (!(step = PyLong_FromLongLong(x)))
                goto done;
        }
    }
    if (hint_search(p, b, n, 1, &d) && !(epoch = float_obj(p, d, &ret)))
        goto done;
    for (k = 0; k < nloss; k++) {
        PyObject *row[8] = {prefix, line, seg, s_loss_line, objs[2 * k + 1], objs[2 * k],
                            step ? step : Py_None, epoch ? epoch : Py_None};
        if (put_row(tm, row, 8) < 0)
            goto done;
    }
    ret = 1;
done:
    for (r = 0; r < (int)(sizeof(objs) / sizeof(objs[0])); r++)
        Py_XDECREF(objs[r]);
    Py_XDECREF(step);
    Py_XDECREF(epoch);
    return ret;
}

/* the launcher prefix of ASCII p[0:n] (split_prefix's rules, without the "<std" forms, which
 * the caller declines): *label set (a new str, or None) and the body's start returned; -1 on
 * error */
static Py_ssize_t
bytes_prefix(const char *p, Py_ssize_t n, PyObject **label)
{
    Py_ssize_t i = 0, a, b, d;

    *label = NULL;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i < n && IS_DIGIT(p[i])) { /* srun */
        a = i;
        while (i < n && IS_DIGIT(p[i]))
            i++;
        if (i - a <= 6 && i + 1 < n && p[i] == ':' && p[i + 1] == ' ') {
            *label = PyUnicode_FromStringAndSize(p + a, i - a);
            return *label ? i + 2 : -1;
        }
    }
    else if (i < n && p[i] == '[') {
        a = ++i;
        if (i < n && IS_DIGIT(p[i])) { /* bare */
            for (b = i; b < n && IS_DIGIT(p[b]); b++)
                ;
            if (b - a <= 6 && b + 1 < n && p[b] == ']' && (p[b + 1] == ' ' || p[b + 1] == '\t')) {
                *label = PyUnicode_FromStringAndSize(p + a, b - a);
                return *label ? b + 2 : -1;
            }
        }
        else {
            for (b = i; b < n && IS_WORD(p[b]); b++)
                ;
            for (d = b; d < n && IS_DIGIT(p[d]); d++)
                ;
            if (b - i == 4 && memcmp(p + i, "rank", 4) == 0 && d > b && d + 1 < n &&
                p[d] == ']' && (p[d + 1] == ':' || p[d + 1] == ' ' || p[d + 1] == '\t')) {
                *label = PyUnicode_FromStringAndSize(p + b, d - b);
                return *label ? d + 2 : -1;
            }
            if (b > i && d > b && d + 1 < n && p[d] == ']' && p[d + 1] == ':') {
                *label = PyUnicode_FromStringAndSize(p + a, d - a);
                return *label ? d + 2 : -1;
            }
        }
    }
    *label = Py_NewRef(Py_None);
    return 0;
}

static int
cr_bytes(const char *p, Py_ssize_t n, PyObject *whole_start, PyObject *line, Py_ssize_t start,
         PyObject *rows);

/* the next keyword at or after pos: its position, -1 none, -2 error */
static Py_ssize_t
next_hit(PyObject *bufobj, Py_ssize_t pos, Py_ssize_t end)
{
    PyObject *args[4], *r, *first, *at;
    Py_ssize_t hit = -2;

    args[0] = scan_anchor;
    args[1] = bufobj;
    if (!(args[2] = PyLong_FromSsize_t(pos)))
        return -2;
    if (!(args[3] = PyLong_FromSsize_t(end))) {
        Py_DECREF(args[2]);
        return -2;
    }
    r = PyObject_Vectorcall(scan_match, args, 4, NULL);
    Py_DECREF(args[2]);
    Py_DECREF(args[3]);
    if (!r)
        return -2;
    if ((first = PySequence_GetItem(r, 0))) {
        if ((at = PySequence_GetItem(first, 0))) {
            hit = PyLong_AsSsize_t(at);
            if (hit == -1 && PyErr_Occurred())
                hit = -2;
            else if (hit < 0)
                hit = -1;
            Py_DECREF(at);
        }
        Py_DECREF(first);
    }
    Py_DECREF(r);
    return hit;
}

/* one plain line [ls, le) with the keyword at pos: 1 read, 0 decline, -1 error */
static int
plain_bytes(const char *buf, Py_ssize_t ls, Py_ssize_t le, Py_ssize_t pos, PyObject *line,
            PyObject *tp, PyObject *tm)
{
    const char *p = buf + ls;
    Py_ssize_t n = le - ls, i, b;
    PyObject *label, *seg;
    int r;

    if (pos - ls > scan_max_segment || le - pos > scan_max_segment)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if ((c < 0x20 && c != '\t') || c > 0x7e)
            return 0;
    }
    if (has(p, n, "<std", 4))
        return 0;
    for (i = 0; i < PyTuple_GET_SIZE(scan_declines); i++) {
        PyObject *g = PyTuple_GET_ITEM(scan_declines, i);
        if (has(p, n, PyBytes_AS_STRING(g), PyBytes_GET_SIZE(g)))
            return 0;
    }
    if ((b = bytes_prefix(p, n, &label)) < 0)
        return -1;
    if (!(seg = PyLong_FromSsize_t(ls))) {
        Py_DECREF(label);
        return -1;
    }
    r = plain_line(p, b, n, label, line, seg, tp, tm);
    Py_DECREF(label);
    Py_DECREF(seg);
    return r;
}

static PyObject *
scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos, end, start, counted, lineno, hit = -1, lo, ls, le, i;
    PyObject *tp = NULL, *tm = NULL, *line = NULL, *result = NULL;
    const char *buf;
    int r = 0;

    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "scan(buf, pos, end, start, counted, line, rows)");
        return NULL;
    }
    if (scan_match == NULL || pre_cache == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_tqdm_fast.configure_scan() was not called");
        return NULL;
    }
    pos = PyLong_AsSsize_t(args[1]);
    end = PyLong_AsSsize_t(args[2]);
    start = PyLong_AsSsize_t(args[3]);
    counted = PyLong_AsSsize_t(args[4]);
    lineno = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    buf = view.buf;
    if (!(0 <= start && start <= counted && counted <= pos && pos <= end && end <= view.len)) {
        PyErr_SetString(PyExc_ValueError, "scan(): positions out of order");
        goto done;
    }
    if (!(tp = PyObject_GetAttr(args[6], s_tp)) || !(tm = PyObject_GetAttr(args[6], s_tm)))
        goto done;
    if (!((Py_IS_TYPE(tp, &TableType) && Py_IS_TYPE(tm, &TableType) &&
           ((Table *)tp)->ncols == 11 && ((Table *)tm)->ncols == 8) ||
          (PyList_CheckExact(tp) && PyList_CheckExact(tm)))) {
        PyErr_SetString(PyExc_TypeError, "scan(): rows.tp, rows.tm: Tables or lists");
        goto done;
    }
    for (;;) {
        /* Right after a line read, the next line: when it holds a '\r' and one of the literal
         * keywords and is shorter than the window, the matcher's next hit is in it (no keyword
         * starts with a '\n'), and what is done with a '\r' line does not depend on where in
         * the line the hit is (the newlines before it, the line's bounds, cr_bytes): the line
         * start stands for the hit, without a call of the matcher (most of a dense log) */
        const char *q = NULL;
        int cr;
        while (pos < end && buf[pos] == '\n' && scan_literals != NULL &&
               (q = memchr(buf + pos + 1, '\n',
                           (size_t)((end - pos - 1 < scan_window ? end : pos + 1 + scan_window) -
                                    pos - 1))) != NULL) {
            const char *ls_ = buf + pos + 1;
            if (memchr(ls_, '\r', (size_t)(q - ls_)) && has_literal(ls_, q - ls_))
                break; /* q: the line read without the matcher */
            if (scan_required && !has_required((const unsigned char *)ls_, q - ls_)) {
                pos = q - buf; /* no keyword starts in this line: the next one */
                q = NULL;
                continue;
            }
            q = NULL; /* the matcher finds the hit (in this line, or after it) */
            break;
        }
        if (q != NULL)
            hit = pos + 1;
        else if ((hit = next_hit(args[0], pos, end)) < -1)
            goto done;
        if (hit < 0)
            break;
        lineno += count_newlines(buf + counted, hit - counted);
        counted = hit;
        if (q != NULL) { /* the line read without the matcher */
            ls = hit;
            le = q - buf;
            cr = 1;
        }
        else {
            /* the line around the hit: a '\n' before it within the window (or the range
             * start within it), a '\n' after it within the window and before end */
            lo = hit - scan_window > start ? hit - scan_window : start;
            for (ls = hit; ls > lo && buf[ls - 1] != '\n'; ls--)
                ;
            if (ls == lo && lo > start)
                break; /* longer than the window (Python records it): Python */
            i = hit + scan_window < end ? hit + scan_window : end;
            q = memchr(buf + hit, '\n', (size_t)(i - hit));
            if (!q)
                break; /* no newline: a long line, or the last one; Python */
            le = q - buf;
            cr = memchr(buf + ls, '\r', (size_t)(le - ls)) != NULL;
        }
        Py_XSETREF(line, PyLong_FromSsize_t(lineno));
        if (!line)
            goto done;
        if (cr)
            r = cr_bytes(buf + ls, le - ls, Py_True, line, ls, args[6]);
        else
            r = plain_bytes(buf, ls, le, hit, line, tp, tm);
        if (r < 0)
            goto done;
        if (r == 0)
            break; /* declined: Python reads this line */
        pos = le;
    }
    result = Py_BuildValue("(nnn)", hit, lineno, counted);
done:
    Py_XDECREF(line);
    Py_XDECREF(tp);
    Py_XDECREF(tm);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *
configure_scan(PyObject *self, PyObject *args)
{
    PyObject *match, *anchor, *declines, *samba, *loss;
    Py_ssize_t window, max_segment, i;

    if (!PyArg_ParseTuple(args, "OOnnO!O!O!:configure_scan", &match, &anchor, &window,
                          &max_segment, &PyTuple_Type, &declines, &PyBytes_Type, &samba,
                          &PyBytes_Type, &loss))
        return NULL;
    for (i = 0; i < PyTuple_GET_SIZE(declines); i++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(declines, i))) {
            PyErr_SetString(PyExc_TypeError, "configure_scan(): declines: a tuple of bytes");
            return NULL;
        }
    }
    Py_XSETREF(scan_match, Py_NewRef(match));
    Py_XSETREF(scan_anchor, Py_NewRef(anchor));
    Py_XSETREF(scan_declines, Py_NewRef(declines));
    /* the guards live as long as the module holds them */
    Py_XSETREF(s_samba_guard_obj, Py_NewRef(samba));
    Py_XSETREF(s_loss_guard_obj, Py_NewRef(loss));
    samba_guard = PyBytes_AS_STRING(samba);
    samba_guard_len = PyBytes_GET_SIZE(samba);
    loss_guard = PyBytes_AS_STRING(loss);
    loss_guard_len = PyBytes_GET_SIZE(loss);
    scan_window = window;
    scan_max_segment = max_segment;
    Py_RETURN_NONE;
}

/* configure_literals(literals): the keywords that are plain literals (a tuple of bytes) */
static PyObject *
configure_literals(PyObject *self, PyObject *literals)
{
    Py_ssize_t i;

    if (!PyTuple_CheckExact(literals)) {
        PyErr_SetString(PyExc_TypeError, "configure_literals(): a tuple of bytes");
        return NULL;
    }
    for (i = 0; i < PyTuple_GET_SIZE(literals); i++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(literals, i)) ||
            PyBytes_GET_SIZE(PyTuple_GET_ITEM(literals, i)) == 0) {
            PyErr_SetString(PyExc_TypeError, "configure_literals(): a tuple of bytes");
            return NULL;
        }
    }
    Py_XSETREF(scan_literals, PyTuple_GET_SIZE(literals) ? Py_NewRef(literals) : NULL);
    Py_RETURN_NONE;
}

/* configure_required(literals): general.required_literals(), a tuple of bytes of two bytes
 * or more (at most MAX_REQUIRED), or None: no filter */
static PyObject *
configure_required(PyObject *self, PyObject *literals)
{
    Py_ssize_t i, n;

    if (literals != Py_None) {
        if (!PyTuple_CheckExact(literals) || PyTuple_GET_SIZE(literals) > MAX_REQUIRED) {
            PyErr_SetString(PyExc_TypeError,
                             "configure_required(): a tuple of bytes (at most 255) or None");
            return NULL;
        }
        for (i = 0; i < PyTuple_GET_SIZE(literals); i++) {
            if (!PyBytes_CheckExact(PyTuple_GET_ITEM(literals, i)) ||
                PyBytes_GET_SIZE(PyTuple_GET_ITEM(literals, i)) < 2) {
                PyErr_SetString(PyExc_TypeError,
                                 "configure_required(): bytes of two bytes or more");
                return NULL;
            }
        }
    }
    memset(req_head, 0, sizeof(req_head));
    Py_CLEAR(scan_required);
    if (literals == Py_None || PyTuple_GET_SIZE(literals) == 0)
        Py_RETURN_NONE;
    scan_required = Py_NewRef(literals);
    n = PyTuple_GET_SIZE(literals);
    for (i = n - 1; i >= 0; i--) { /* chained in the tuple's order */
        PyObject *lit = PyTuple_GET_ITEM(literals, i);
        const unsigned char *w = (const unsigned char *)PyBytes_AS_STRING(lit);
        Py_ssize_t at = pair_at(w, PyBytes_GET_SIZE(lit));
        unsigned pair = w[at] | (unsigned)w[at + 1] << 8;
        req_at[i] = at;
        req_next[i] = req_head[pair];
        req_head[pair] = (uint8_t)(i + 1);
    }
    Py_RETURN_NONE;
}

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *a[8];
    PyObject **slots[8] = {&pre_cache, &pre_info, &unit_cache, &unit_kind, &tqdm_count,
                           &postfix, &scan_text, &snake};
    int i;

    if (!PyArg_ParseTuple(args, "O!OO!OOOOO:configure", &PyDict_Type, &a[0], &a[1],
                          &PyDict_Type, &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]))
        return NULL;
    for (i = 0; i < 8; i++) {
        Py_INCREF(a[i]);
        Py_XSETREF(*slots[i], a[i]);
    }
    Py_CLEAR(memo_scale);
    Py_CLEAR(memo_unit);
    Py_CLEAR(memo_per);
    Py_CLEAR(memo_kind);
    Py_CLEAR(memo_pre);
    Py_CLEAR(memo_info);
    pre_slots_clear();
    snakes_clear();
    Py_XSETREF(head_cache, PyDict_New());
    if (!head_cache)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"tqdm_updates", (PyCFunction)(void (*)(void))tqdm_updates, METH_FASTCALL,
     "tqdm_updates(text, line_prefix, line, start, rows) -> bool: trainlog._tqdm_updates."},
    {"cr_line", (PyCFunction)(void (*)(void))cr_line, METH_FASTCALL,
     "cr_line(raw, whole_start, line, start, rows) -> bool: the fast path of _cr_line."},
    {"line_prefix", line_prefix, METH_O, "line_prefix(text): trainlog._split_prefix(text)[0]."},
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "scan(buf, pos, end, start, counted, line, rows) -> (hit, line, counted): the scan loop."},
    {"configure_scan", configure_scan, METH_VARARGS,
     "configure_scan(match, anchor, window, max_segment, declines, samba_guard, loss_guard)"},
    {"configure_literals", configure_literals, METH_O,
     "configure_literals(literals): the keywords that are plain literals (bytes)."},
    {"configure_required", configure_required, METH_O,
     "configure_required(literals): every keyword's match holds one of them (bytes), or None."},
    {"configure", configure, METH_VARARGS,
     "configure(pre_cache, pre_info, unit_cache, unit_kind, tqdm_count, postfix, scan_text, "
     "snake)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tqdm_fast",
    "trainlog._tqdm_updates in C (optional; the Python function is the reference).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__tqdm_fast(void)
{
    PyObject *mod;

    if (!(s_tqdm = PyUnicode_InternFromString("tqdm")) ||
        !(s_instance = PyUnicode_InternFromString("instance")) ||
        !(s_tp = PyUnicode_InternFromString("tp")) ||
        !(s_tm = PyUnicode_InternFromString("tm")) ||
        !(s_sambaflow = PyUnicode_InternFromString("sambaflow")) ||
        !(s_e2e = PyUnicode_InternFromString("e2e samples_per_sec")) ||
        !(s_samples = PyUnicode_InternFromString("samples_per_s")) ||
        !(s_loss_line = PyUnicode_InternFromString("loss_line")) ||
        !(s_loop_time = PyUnicode_InternFromString("train_loop_time_s")) ||
        !(s_epochs = PyUnicode_InternFromString("epochs")) ||
        !(s_global_steps = PyUnicode_InternFromString("global_steps")))
        return NULL;
    if (PyType_Ready(&TableType) < 0)
        return NULL;
    {
        int c;
        for (c = 0; c < 256; c++)
            CR_SPECIAL[c] = c == '\r' || c == 0x1b || c == '<' || c >= 0x80;
    }
    mod = PyModule_Create(&module);
    if (mod && PyModule_AddObjectRef(mod, "Table", (PyObject *)&TableType) < 0)
        Py_CLEAR(mod);
    return mod;
}
