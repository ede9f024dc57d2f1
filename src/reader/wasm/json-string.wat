;; A JSON string body's scan, 32 bytes at a time (json-scan.ts scanString hands it the
;; rest of a long string). The reader's line scans spend most of their time inside string
;; bodies, and JavaScript can look at only four bytes a step there; WebAssembly's SIMD looks at
;; 32. It validates exactly as JSON.parse does: a raw byte below 0x20 ends the scan invalid, and
;; so does a backslash not followed by one of JSON's escapes (\u with four hex digits).
;;
;; The line is copied into this memory first (json-scan.ts mirrorLine, long-strings.ts): its
;; first 2 MiB hold it, the longest line it takes; longer lines are scanned by the JavaScript
;; loop alone. Above them (OUT): the characters of long string values, as UTF-16 or Latin-1
;; (4 MiB and some slack: a body's byte is at most one UTF-16 unit), then (LIST) the list of
;; those values (4,096 of 16 bytes: a value of at least 512 bytes in a 2 MiB line leaves room
;; for fewer). Then (TAPE) the tokens of a line's shallow levels (65,536 of 12 bytes), the kind
;; of each open container (STACK: 65,536 depths, a byte each) and the tape entry of each open
;; shallow container (OPEN). 112 pages; the memory never grows, so the views JavaScript reads and
;; copies through stay valid. Layout constants: module.ts.
;;
;; Built into src/reader/wasm/json-string.ts by scripts/build-wasm.ts (npm run build:wasm);
;; test/reader/wasm.test.ts checks the two agree.
(module
  (memory (export "memory") 112)
  ;; Where the next unescaped value goes (long-strings.ts sets it to OUT before a line).
  (global $out (export "out") (mut i32) (i32.const 0x200000))
  ;; Where the last string $body read ended its units.
  (global $written (mut i32) (i32.const 0))
  ;; Whether byte $c is an ASCII hex digit.
  (func $hex (param $c i32) (result i32)
    (i32.or
      (i32.lt_u (i32.sub (local.get $c) (i32.const 0x30)) (i32.const 10))
      (i32.lt_u (i32.sub (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x61)) (i32.const 6))))
  ;; Scans a string body from $p to its closing quote before $end: the quote's index, with bit 30
  ;; set when the body held an escape; -1 for a raw byte below 0x20, a bad escape, or no closing
  ;; quote. Every load lies inside [$p, $end): no byte after the line is read.
  (func $string (export "string") (param $p i32) (param $end i32) (result i32)
    (local $v v128) (local $w v128) (local $m i32) (local $c i32) (local $esc i32)
    (loop $scan
      ;; Find the next quote, backslash or control byte, 32 bytes a round, then byte by byte.
      (block $found
        (block $wide
          (loop $pairs
            (br_if $wide (i32.gt_u (i32.add (local.get $p) (i32.const 32)) (local.get $end)))
            (local.set $v (v128.load (local.get $p)))
            (local.set $w (v128.load offset=16 (local.get $p)))
            (local.set $m
              (i32.or
                (i8x16.bitmask
                  (v128.or
                    (v128.or
                      (i8x16.eq (local.get $v) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                      (i8x16.eq (local.get $v) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
                    (i8x16.lt_u (local.get $v) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))))
                (i32.shl
                  (i8x16.bitmask
                    (v128.or
                      (v128.or
                        (i8x16.eq (local.get $w) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                        (i8x16.eq (local.get $w) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
                      (i8x16.lt_u (local.get $w) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))))
                  (i32.const 16))))
            (if (local.get $m)
              (then
                (local.set $p (i32.add (local.get $p) (i32.ctz (local.get $m))))
                (br $found)))
            (local.set $p (i32.add (local.get $p) (i32.const 32)))
            (br $pairs)))
        (loop $bytes
          (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (i32.const -1))))
          (local.set $c (i32.load8_u (local.get $p)))
          (br_if $found
            (i32.or
              (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
              (i32.lt_u (local.get $c) (i32.const 0x20))))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $bytes)))
      ;; $p is at a special byte before $end.
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 0x22))
        (then (return (i32.or (local.get $p) (i32.shl (local.get $esc) (i32.const 30))))))
      (if (i32.lt_u (local.get $c) (i32.const 0x20)) (then (return (i32.const -1))))
      ;; A backslash: the escapes JSON allows, and \u with four hex digits.
      (local.set $esc (i32.const 1))
      (if (i32.ge_u (i32.add (local.get $p) (i32.const 1)) (local.get $end)) (then (return (i32.const -1))))
      (local.set $c (i32.load8_u offset=1 (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 0x75))
        (then
          (if (i32.ge_u (i32.add (local.get $p) (i32.const 5)) (local.get $end)) (then (return (i32.const -1))))
          (if (i32.eqz
                (i32.and
                  (i32.and (call $hex (i32.load8_u offset=2 (local.get $p))) (call $hex (i32.load8_u offset=3 (local.get $p))))
                  (i32.and (call $hex (i32.load8_u offset=4 (local.get $p))) (call $hex (i32.load8_u offset=5 (local.get $p))))))
            (then (return (i32.const -1))))
          (local.set $p (i32.add (local.get $p) (i32.const 6)))
          (br $scan)))
      (if (i32.or
            (i32.or
              (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
              (i32.or (i32.eq (local.get $c) (i32.const 0x2f)) (i32.eq (local.get $c) (i32.const 0x62))))
            (i32.or
              (i32.or (i32.eq (local.get $c) (i32.const 0x66)) (i32.eq (local.get $c) (i32.const 0x6e)))
              (i32.or (i32.eq (local.get $c) (i32.const 0x72)) (i32.eq (local.get $c) (i32.const 0x74)))))
        (then
          (local.set $p (i32.add (local.get $p) (i32.const 2)))
          (br $scan)))
      (return (i32.const -1)))
    (i32.const -1))
  ;; The value of four hex digits at $p.
  (func $hex4 (param $p i32) (result i32)
    (local $i i32) (local $v i32) (local $c i32)
    (loop $digits
      (local.set $c (i32.load8_u (i32.add (local.get $p) (local.get $i))))
      (local.set $v
        (i32.or
          (i32.shl (local.get $v) (i32.const 4))
          (if (result i32) (i32.le_u (local.get $c) (i32.const 0x39))
            (then (i32.sub (local.get $c) (i32.const 0x30)))
            (else (i32.sub (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x57))))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $digits (i32.lt_u (local.get $i) (i32.const 4))))
    (local.get $v))
  ;; Whether byte $c is a UTF-8 continuation byte between $lo and $hi (inclusive).
  (func $cont (param $c i32) (param $lo i32) (param $hi i32) (result i32)
    (i32.and (i32.ge_u (local.get $c) (local.get $lo)) (i32.le_u (local.get $c) (local.get $hi))))
  ;; Reads the string body from $p to its closing quote before $end and writes its characters,
  ;; as JSON.parse reads them, as UTF-16 code units from $out to $written ($out stays as it
  ;; was: the caller keeps them or not). Returns the quote's index, with bit 30 set when a unit is above
  ;; 0xFF; -1 for a body JSON refuses (a raw byte below 0x20, a bad escape, no closing quote);
  ;; -2 for bytes that are not UTF-8 (the decoder would repair them: the caller parses that line
  ;; whole). An escaped surrogate is its unit, paired or not, as JSON.parse keeps it.
  (func $body (param $p i32) (param $end i32) (result i32)
    (local $o i32) (local $v v128) (local $m i32) (local $c i32) (local $u i32) (local $wide i32)
    (local $c1 i32) (local $c2 i32) (local $c3 i32)
    (local.set $o (global.get $out))
    (loop $run
      ;; Copy plain ASCII, 16 bytes a round widened to 16 units (a round stores all 16 and keeps
      ;; those before the first byte that needs a look: the slack above OUT takes the rest).
      (block $special
        ;; Characters that need a look often come in runs (a word in another script): the next
        ;; byte is looked at alone first, before a round of 16.
        (if (i32.lt_u (local.get $p) (local.get $end))
          (then
            (local.set $c (i32.load8_u (local.get $p)))
            (br_if $special
              (i32.or
                (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
                (i32.gt_u (i32.sub (local.get $c) (i32.const 0x20)) (i32.const 0x5f))))))
        (block $narrow
          (loop $rounds
            (br_if $narrow (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $end)))
            (local.set $v (v128.load (local.get $p)))
            (v128.store (local.get $o) (i16x8.extend_low_i8x16_u (local.get $v)))
            (v128.store offset=16 (local.get $o) (i16x8.extend_high_i8x16_u (local.get $v)))
            (local.set $m
              (i8x16.bitmask
                (v128.or
                  (v128.or
                    (i8x16.eq (local.get $v) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                    (i8x16.eq (local.get $v) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
                  ;; Below 0x20 or above 0x7f: unsigned, a byte minus 0x20 is then at least 0x60.
                  (i8x16.gt_u
                    (i8x16.sub (local.get $v) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))
                    (v128.const i8x16 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f 0x5f)))))
            (if (local.get $m)
              (then
                (local.set $p (i32.add (local.get $p) (i32.ctz (local.get $m))))
                (local.set $o (i32.add (local.get $o) (i32.shl (i32.ctz (local.get $m)) (i32.const 1))))
                (br $special)))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (local.set $o (i32.add (local.get $o) (i32.const 32)))
            (br $rounds)))
        (loop $bytes
          (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (i32.const -1))))
          (local.set $c (i32.load8_u (local.get $p)))
          (br_if $special
            (i32.or
              (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
              (i32.gt_u (i32.sub (local.get $c) (i32.const 0x20)) (i32.const 0x5f))))
          (i32.store16 (local.get $o) (local.get $c))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (local.set $o (i32.add (local.get $o) (i32.const 2)))
          (br $bytes)))
      ;; $p is at a quote, a backslash, a control byte or a byte above 0x7f, before $end. A
      ;; character of one unit breaks out of $put with the unit in $u.
      (block $put
      (local.set $c (i32.load8_u (local.get $p)))
      (if (i32.eq (local.get $c) (i32.const 0x22))
        (then
          (global.set $written (local.get $o))
          (return (i32.or (local.get $p) (i32.shl (local.get $wide) (i32.const 30))))))
      (if (i32.lt_u (local.get $c) (i32.const 0x20)) (then (return (i32.const -1))))
      (if (i32.eq (local.get $c) (i32.const 0x5c))
        (then
          (if (i32.ge_u (i32.add (local.get $p) (i32.const 1)) (local.get $end)) (then (return (i32.const -1))))
          (local.set $c (i32.load8_u offset=1 (local.get $p)))
          (if (i32.eq (local.get $c) (i32.const 0x75))
            (then
              (if (i32.ge_u (i32.add (local.get $p) (i32.const 5)) (local.get $end)) (then (return (i32.const -1))))
              (if (i32.eqz
                    (i32.and
                      (i32.and (call $hex (i32.load8_u offset=2 (local.get $p))) (call $hex (i32.load8_u offset=3 (local.get $p))))
                      (i32.and (call $hex (i32.load8_u offset=4 (local.get $p))) (call $hex (i32.load8_u offset=5 (local.get $p))))))
                (then (return (i32.const -1))))
              (local.set $u (call $hex4 (i32.add (local.get $p) (i32.const 2))))
              (local.set $p (i32.add (local.get $p) (i32.const 6)))
              (br $put))
            (else
              (local.set $u
                (if (result i32) (i32.eq (local.get $c) (i32.const 0x6e)) (then (i32.const 0x0a))
                  (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x74)) (then (i32.const 0x09))
                    (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x72)) (then (i32.const 0x0d))
                      (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x62)) (then (i32.const 0x08))
                        (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x66)) (then (i32.const 0x0c))
                          (else (if (result i32)
                                  (i32.or
                                    (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
                                    (i32.eq (local.get $c) (i32.const 0x2f)))
                            (then (local.get $c))
                            (else (i32.const -1))))))))))))))
              (if (i32.lt_s (local.get $u) (i32.const 0)) (then (return (i32.const -1))))
              (i32.store16 (local.get $o) (local.get $u))
              (local.set $o (i32.add (local.get $o) (i32.const 2)))
              (local.set $p (i32.add (local.get $p) (i32.const 2)))
              (br $run)))))
      ;; A byte above 0x7f: a UTF-8 sequence, checked as Unicode defines well-formed UTF-8
      ;; (no overlong form, no surrogate, nothing above U+10FFFF), or -2. Two and three bytes
      ;; (most text that is not English) are checked by arithmetic rather than by lead byte:
      ;; continuation bytes are 0x80-0xBF, a three-byte form under U+0800 is overlong, and one
      ;; from U+D800 to U+DFFF a surrogate (what E0 and ED restrict their second byte for).
      (if (i32.lt_u (local.get $c) (i32.const 0xe0))
        (then
          (if (i32.lt_u (local.get $c) (i32.const 0xc2)) (then (return (i32.const -2))))
          (if (i32.ge_u (i32.add (local.get $p) (i32.const 1)) (local.get $end)) (then (return (i32.const -2))))
          (local.set $c1 (i32.load8_u offset=1 (local.get $p)))
          (if (i32.ge_u (i32.xor (local.get $c1) (i32.const 0x80)) (i32.const 0x40)) (then (return (i32.const -2))))
          (local.set $u (i32.or (i32.shl (i32.and (local.get $c) (i32.const 0x1f)) (i32.const 6)) (i32.and (local.get $c1) (i32.const 0x3f))))
          (local.set $p (i32.add (local.get $p) (i32.const 2)))
          (br $put)))
      (if (i32.lt_u (local.get $c) (i32.const 0xf0))
        (then
          ;; Such characters come in runs (a word in another script): the run is read here. Every
          ;; unit is at least U+0800.
          (local.set $wide (i32.const 1))
          (loop $three
            (if (i32.ge_u (i32.add (local.get $p) (i32.const 2)) (local.get $end)) (then (return (i32.const -2))))
            (local.set $c1 (i32.load8_u offset=1 (local.get $p)))
            (local.set $c2 (i32.load8_u offset=2 (local.get $p)))
            (if (i32.ge_u
                  (i32.or (i32.xor (local.get $c1) (i32.const 0x80)) (i32.xor (local.get $c2) (i32.const 0x80)))
                  (i32.const 0x40))
              (then (return (i32.const -2))))
            (local.set $u
              (i32.or
                (i32.or
                  (i32.shl (i32.and (local.get $c) (i32.const 0x0f)) (i32.const 12))
                  (i32.shl (i32.and (local.get $c1) (i32.const 0x3f)) (i32.const 6)))
                (i32.and (local.get $c2) (i32.const 0x3f))))
            (if (i32.or
                  (i32.lt_u (local.get $u) (i32.const 0x800))
                  (i32.eq (i32.and (local.get $u) (i32.const 0xf800)) (i32.const 0xd800)))
              (then (return (i32.const -2))))
            (i32.store16 (local.get $o) (local.get $u))
            (local.set $o (i32.add (local.get $o) (i32.const 2)))
            (local.set $p (i32.add (local.get $p) (i32.const 3)))
            (br_if $run (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $c (i32.load8_u (local.get $p)))
            (br_if $three (i32.eq (i32.and (local.get $c) (i32.const 0xf0)) (i32.const 0xe0))))
          (br $run)))
      (if (i32.gt_u (local.get $c) (i32.const 0xf4)) (then (return (i32.const -2))))
      (if (i32.ge_u (i32.add (local.get $p) (i32.const 3)) (local.get $end)) (then (return (i32.const -2))))
      (local.set $c1 (i32.load8_u offset=1 (local.get $p)))
      (local.set $c2 (i32.load8_u offset=2 (local.get $p)))
      (local.set $c3 (i32.load8_u offset=3 (local.get $p)))
      (if (i32.eqz
            (i32.and
              (if (result i32) (i32.eq (local.get $c) (i32.const 0xf0))
                (then (call $cont (local.get $c1) (i32.const 0x90) (i32.const 0xbf)))
                (else (if (result i32) (i32.eq (local.get $c) (i32.const 0xf4))
                  (then (call $cont (local.get $c1) (i32.const 0x80) (i32.const 0x8f)))
                  (else (call $cont (local.get $c1) (i32.const 0x80) (i32.const 0xbf))))))
              (i32.and
                (call $cont (local.get $c2) (i32.const 0x80) (i32.const 0xbf))
                (call $cont (local.get $c3) (i32.const 0x80) (i32.const 0xbf)))))
        (then (return (i32.const -2))))
      (local.set $u
        (i32.sub
          (i32.or
            (i32.or
              (i32.shl (i32.and (local.get $c) (i32.const 0x07)) (i32.const 18))
              (i32.shl (i32.and (local.get $c1) (i32.const 0x3f)) (i32.const 12)))
            (i32.or
              (i32.shl (i32.and (local.get $c2) (i32.const 0x3f)) (i32.const 6))
              (i32.and (local.get $c3) (i32.const 0x3f))))
          (i32.const 0x10000)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      ;; A surrogate pair.
      (i32.store16 (local.get $o) (i32.or (i32.const 0xd800) (i32.shr_u (local.get $u) (i32.const 10))))
      (i32.store16 offset=2 (local.get $o) (i32.or (i32.const 0xdc00) (i32.and (local.get $u) (i32.const 0x3ff))))
      (local.set $o (i32.add (local.get $o) (i32.const 4)))
      (local.set $wide (i32.const 1))
      (br $run))
      (i32.store16 (local.get $o) (local.get $u))
      (local.set $o (i32.add (local.get $o) (i32.const 2)))
      (local.set $wide (i32.or (local.get $wide) (i32.gt_u (local.get $u) (i32.const 0xff))))
      (br $run))
    (i32.const -1))
  ;; Packs the units [$from, $to), all at most 0xFF, into bytes from $from on (Latin-1): the end.
  (func $narrow (param $from i32) (param $to i32) (result i32)
    (local $r i32) (local $w i32)
    (local.set $r (local.get $from))
    (local.set $w (local.get $from))
    (block $done
      (loop $rounds
        (br_if $done (i32.gt_u (i32.add (local.get $r) (i32.const 32)) (local.get $to)))
        (v128.store (local.get $w)
          (i8x16.narrow_i16x8_u (v128.load (local.get $r)) (v128.load offset=16 (local.get $r))))
        (local.set $r (i32.add (local.get $r) (i32.const 32)))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (br $rounds)))
    (block $tail
      (loop $units
        (br_if $tail (i32.ge_u (local.get $r) (local.get $to)))
        (i32.store8 (local.get $w) (i32.load16_u (local.get $r)))
        (local.set $r (i32.add (local.get $r) (i32.const 2)))
        (local.set $w (i32.add (local.get $w) (i32.const 1)))
        (br $units)))
    (local.get $w))
  ;; The string values of at least $min bytes in the JSON text [$p, $end) of the mirrored line,
  ;; listed from entry $k on (at LIST, 16 bytes each: the body's first byte, its closing quote,
  ;; and where its characters lie at OUT: from, with bit 30 set for UTF-16LE (else Latin-1, a
  ;; byte each), to): the new count. Keys are not listed (a string followed by a colon). Text
  ;; outside strings is only stepped over: JSON.parse judges it in the text the caller makes (any
  ;; byte above 0x7f there fails it). Every string is read by $body, so a line whose count this
  ;; returns holds only UTF-8 in its strings. -1 for a string JSON refuses, -2 for bytes that are
  ;; not UTF-8, -3 for a full list: the caller parses the line whole.
  (func (export "spans") (param $p i32) (param $end i32) (param $min i32) (param $k i32) (result i32)
    (local $s i32) (local $r i32) (local $q i32) (local $n i32) (local $c i32) (local $at i32)
    (local $o i32) (local $to i32)
    (loop $outside
      (block $quote
        (loop $bytes
          (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (local.get $k))))
          (br_if $quote (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x22)))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $bytes)))
      (local.set $s (i32.add (local.get $p) (i32.const 1)))
      (local.set $r (call $body (local.get $s) (local.get $end)))
      (if (i32.lt_s (local.get $r) (i32.const 0)) (then (return (local.get $r))))
      (local.set $q (i32.and (local.get $r) (i32.const 0x3fffffff)))
      (local.set $p (i32.add (local.get $q) (i32.const 1)))
      (if (i32.ge_u (i32.sub (local.get $q) (local.get $s)) (local.get $min))
        (then
          ;; A key is followed by a colon, after any whitespace.
          (local.set $n (local.get $p))
          (block $seen
            (loop $ws
              (br_if $seen (i32.ge_u (local.get $n) (local.get $end)))
              (local.set $c (i32.load8_u (local.get $n)))
              (br_if $seen
                (i32.eqz
                  (i32.or
                    (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x09)))
                    (i32.or (i32.eq (local.get $c) (i32.const 0x0a)) (i32.eq (local.get $c) (i32.const 0x0d))))))
              (local.set $n (i32.add (local.get $n) (i32.const 1)))
              (br $ws)))
          (if (i32.or (i32.ge_u (local.get $n) (local.get $end)) (i32.ne (local.get $c) (i32.const 0x3a)))
            (then
              (if (i32.ge_u (local.get $k) (i32.const 4096)) (then (return (i32.const -3))))
              ;; Keep its characters: $out moves past them (to an even offset, for UTF-16).
              (local.set $o (global.get $out))
              (local.set $to (global.get $written))
              (if (i32.eqz (i32.and (local.get $r) (i32.const 0x40000000)))
                (then (local.set $to (call $narrow (local.get $o) (local.get $to)))))
              (global.set $out (i32.and (i32.add (local.get $to) (i32.const 1)) (i32.const -2)))
              (local.set $at (i32.add (i32.const 0x610000) (i32.shl (local.get $k) (i32.const 4))))
              (i32.store (local.get $at) (local.get $s))
              (i32.store offset=4 (local.get $at) (local.get $q))
              (i32.store offset=8 (local.get $at)
                (i32.or (local.get $o) (i32.and (local.get $r) (i32.const 0x40000000))))
              (i32.store offset=12 (local.get $at) (local.get $to))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))))))
      (br $outside))
    (i32.const -1))

  ;; ---- A whole line's validation, with the tokens of its shallow levels (line-tokens.ts) ----
  ;; The tape entries written by $tokens so far (some may not fit: the caller then declines).
  (global $n (mut i32) (i32.const 0))
  ;; Writes tape entry $n (kind | depth << 8, from, to) when it fits, and counts it.
  (func $emit (param $kind i32) (param $from i32) (param $to i32)
    (local $at i32)
    (if (i32.lt_u (global.get $n) (i32.const 65536))
      (then
        (local.set $at (i32.add (i32.const 0x620000) (i32.mul (global.get $n) (i32.const 12))))
        (i32.store (local.get $at) (local.get $kind))
        (i32.store offset=4 (local.get $at) (local.get $from))
        (i32.store offset=8 (local.get $at) (local.get $to))))
    (global.set $n (i32.add (global.get $n) (i32.const 1))))
  ;; The first byte at or after $p that is not JSON whitespace (space, tab, LF, CR), or $end.
  (func $ws (param $p i32) (param $end i32) (result i32)
    (local $c i32)
    (block $done
      (loop $skip
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (br_if $done (i32.gt_u (local.get $c) (i32.const 0x20)))
        ;; Bits 9, 10, 13 and 32: tab, LF, CR, space.
        (br_if $done
          (i64.eqz
            (i64.and
              (i64.shr_u (i64.const 0x100002600) (i64.extend_i32_u (local.get $c)))
              (i64.const 1))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $skip)))
    (local.get $p))
  ;; Whether byte $c is an ASCII digit.
  (func $digit (param $c i32) (result i32)
    (i32.lt_u (i32.sub (local.get $c) (i32.const 0x30)) (i32.const 10)))
  ;; The index after the number at $p (JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?),
  ;; or -1.
  (func $number (param $p i32) (param $end i32) (result i32)
    (local $c i32)
    (if (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2d))
      (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (i32.const -1))))
    (local.set $c (i32.load8_u (local.get $p)))
    (if (i32.eq (local.get $c) (i32.const 0x30))
      (then (local.set $p (i32.add (local.get $p) (i32.const 1))))
      (else
        (if (i32.eqz (call $digit (local.get $c))) (then (return (i32.const -1))))
        (call $digits (i32.add (local.get $p) (i32.const 1)) (local.get $end))
        (local.set $p)))
    (if (i32.and (i32.lt_u (local.get $p) (local.get $end))
          (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2e)))
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (i32.or (i32.ge_u (local.get $p) (local.get $end))
              (i32.eqz (call $digit (i32.load8_u (local.get $p)))))
          (then (return (i32.const -1))))
        (local.set $p (call $digits (local.get $p) (local.get $end)))))
    (if (i32.and (i32.lt_u (local.get $p) (local.get $end))
          (i32.eq (i32.or (i32.load8_u (local.get $p)) (i32.const 0x20)) (i32.const 0x65)))
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (i32.lt_u (local.get $p) (local.get $end))
          (then
            (local.set $c (i32.load8_u (local.get $p)))
            (if (i32.or (i32.eq (local.get $c) (i32.const 0x2b)) (i32.eq (local.get $c) (i32.const 0x2d)))
              (then (local.set $p (i32.add (local.get $p) (i32.const 1)))))))
        (if (i32.or (i32.ge_u (local.get $p) (local.get $end))
              (i32.eqz (call $digit (i32.load8_u (local.get $p)))))
          (then (return (i32.const -1))))
        (local.set $p (call $digits (local.get $p) (local.get $end)))))
    (local.get $p))
  ;; The index after the digits from $p.
  (func $digits (param $p i32) (param $end i32) (result i32)
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (br_if $done (i32.eqz (call $digit (i32.load8_u (local.get $p)))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $more)))
    (local.get $p))
  ;; The tape's depth limit after a key at depth $d, below $limit before it: an unwatched key's
  ;; value, and everything in it, is left off the tape ($limit is then $d until it ends).
  (func $quiet (param $d i32) (param $limit i32) (result i32)
    (if (result i32) (i32.and (i32.eqz (global.get $watched)) (i32.lt_u (local.get $d) (local.get $limit)))
      (then (local.get $d))
      (else (local.get $limit))))
  ;; The container opened at depth $d closed before $p: its tape entry (when it has one) gets its end.
  (func $closed (param $d i32) (param $limit i32) (param $p i32)
    (local $e i32)
    (if (i32.lt_u (local.get $d) (local.get $limit))
      (then
        (local.set $e (i32.load (i32.add (i32.const 0x6f0000) (i32.shl (local.get $d) (i32.const 2)))))
        (if (i32.lt_u (local.get $e) (i32.const 65536))
          (then
            (i32.store (i32.add (i32.const 0x620008) (i32.mul (local.get $e) (i32.const 12))) (local.get $p)))))))
  ;; Whether the last key $key read is watched (or escaped): its value is then on the tape.
  (global $watched (mut i32) (i32.const 0))
  ;; Whether the key body [$s, $q) (no escape) is one of the watched keys (KEYS: their count,
  ;; then 32 bytes each: the length, then the bytes; written by line-tokens.ts).
  (func $isWatched (param $s i32) (param $q i32) (result i32)
    (local $at i32) (local $last i32) (local $n i32) (local $j i32)
    (local.set $n (i32.sub (local.get $q) (local.get $s)))
    (local.set $at (i32.const 0x6f1004))
    (local.set $last (i32.add (i32.const 0x6f1004) (i32.shl (i32.load (i32.const 0x6f1000)) (i32.const 5))))
    (block $no
      (loop $keys
        (br_if $no (i32.ge_u (local.get $at) (local.get $last)))
        (if (i32.eq (i32.load (local.get $at)) (local.get $n))
          (then
            (local.set $j (i32.const 0))
            (block $differ
              (loop $bytes
                (if (i32.ge_u (local.get $j) (local.get $n)) (then (return (i32.const 1))))
                (br_if $differ
                  (i32.ne
                    (i32.load8_u (i32.add (local.get $s) (local.get $j)))
                    (i32.load8_u offset=4 (i32.add (local.get $at) (local.get $j)))))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $bytes)))))
        (local.set $at (i32.add (local.get $at) (i32.const 32)))
        (br $keys)))
    (i32.const 0))
  ;; Reads `"key" :` from $p (whitespace first) at depth $d, on the tape when $d is below $limit
  ;; and the key is watched ($watched says which): the index after the colon, or -1.
  (func $key (param $p i32) (param $end i32) (param $d i32) (param $limit i32) (result i32)
    (local $q i32)
    (local.set $p (call $ws (local.get $p) (local.get $end)))
    (if (i32.or (i32.ge_u (local.get $p) (local.get $end))
          (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x22)))
      (then (return (i32.const -1))))
    (local.set $q (call $string (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
    (if (i32.lt_s (local.get $q) (i32.const 0)) (then (return (i32.const -1))))
    ;; An escaped key is compared by JavaScript, once decoded.
    (global.set $watched
      (i32.or
        (i32.shr_u (local.get $q) (i32.const 30))
        (call $isWatched (i32.add (local.get $p) (i32.const 1)) (local.get $q))))
    (if (i32.and (global.get $watched) (i32.lt_u (local.get $d) (local.get $limit)))
      (then
        (call $emit (i32.or (i32.const 3) (i32.shl (local.get $d) (i32.const 8)))
          (i32.add (local.get $p) (i32.const 1)) (local.get $q))))
    (local.set $p
      (call $ws (i32.add (i32.and (local.get $q) (i32.const 0x3fffffff)) (i32.const 1)) (local.get $end)))
    (if (i32.or (i32.ge_u (local.get $p) (local.get $end))
          (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x3a)))
      (then (return (i32.const -1))))
    (i32.add (local.get $p) (i32.const 1)))
  ;; Validates the JSON text [$p, $end) of the mirrored line exactly as JSON.parse does (one
  ;; value, whitespace around it; bytes above 0x7f only inside strings, where they are not
  ;; judged: the decoder's U+FFFD is a valid character there) and writes the tape: one entry per
  ;; token at depth <= $max (the containers around it), in the text's order, 12 bytes each:
  ;;   kind | depth << 8: 1 an object, 2 an array (from: its first byte, to: after its last),
  ;;     3 a key and 4 a string (from: the body's first byte, to: its closing quote, bit 30 set
  ;;     when it holds an escape), 5 a number, 6 true, 7 false, 8 null (from, to: its bytes).
  ;; Returns the number of entries; -1 where JSON.parse would throw; -2 when the tape or the
  ;; depth stack is full (the caller scans the line in JavaScript).
  (func (export "tokens") (param $p i32) (param $end i32) (param $max i32) (result i32)
    (local $d i32) (local $c i32) (local $q i32) (local $e i32) (local $kind i32) (local $limit i32)
    (global.set $n (i32.const 0))
    ;; OPEN holds 1,024 depths.
    (if (i32.gt_u (local.get $max) (i32.const 1023)) (then (local.set $max (i32.const 1023))))
    (local.set $limit (i32.add (local.get $max) (i32.const 1)))
    (block $invalid
      (block $full
        (loop $value
          ;; A value starts at or after $p, at depth $d.
          (local.set $p (call $ws (local.get $p) (local.get $end)))
          (br_if $invalid (i32.ge_u (local.get $p) (local.get $end)))
          (local.set $c (i32.load8_u (local.get $p)))
          (block $after
            ;; { or [ (0x5b | 0x20 is 0x7b).
            (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7b))
              (then
                (br_if $full (i32.ge_u (local.get $d) (i32.const 65536)))
                (i32.store8 (i32.add (i32.const 0x6e0000) (local.get $d)) (i32.eq (local.get $c) (i32.const 0x7b)))
                (if (i32.lt_u (local.get $d) (local.get $limit))
                  (then
                    (i32.store (i32.add (i32.const 0x6f0000) (i32.shl (local.get $d) (i32.const 2))) (global.get $n))
                    (call $emit
                      (i32.or (select (i32.const 1) (i32.const 2) (i32.eq (local.get $c) (i32.const 0x7b)))
                        (i32.shl (local.get $d) (i32.const 8)))
                      (local.get $p) (i32.const 0))))
                (local.set $d (i32.add (local.get $d) (i32.const 1)))
                (local.set $p (call $ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
                (br_if $invalid (i32.ge_u (local.get $p) (local.get $end)))
                ;; Empty: } is { + 2, ] is [ + 2.
                (if (i32.eq (i32.load8_u (local.get $p)) (i32.add (local.get $c) (i32.const 2)))
                  (then
                    (local.set $d (i32.sub (local.get $d) (i32.const 1)))
                    (local.set $p (i32.add (local.get $p) (i32.const 1)))
                    (call $closed (local.get $d) (local.get $limit) (local.get $p))
                    (br $after)))
                (br_if $value (i32.eq (local.get $c) (i32.const 0x5b)))
                (local.set $p (call $key (local.get $p) (local.get $end) (local.get $d) (local.get $limit)))
                (br_if $invalid (i32.lt_s (local.get $p) (i32.const 0)))
                (local.set $limit (call $quiet (local.get $d) (local.get $limit)))
                (br $value)))
            (if (i32.eq (local.get $c) (i32.const 0x22))
              (then
                (local.set $q (call $string (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
                (br_if $invalid (i32.lt_s (local.get $q) (i32.const 0)))
                (if (i32.lt_u (local.get $d) (local.get $limit))
                  (then
                    (call $emit (i32.or (i32.const 4) (i32.shl (local.get $d) (i32.const 8)))
                      (i32.add (local.get $p) (i32.const 1)) (local.get $q))))
                (local.set $p (i32.add (i32.and (local.get $q) (i32.const 0x3fffffff)) (i32.const 1)))
                (br $after)))
            (if (i32.or (i32.eq (local.get $c) (i32.const 0x2d)) (call $digit (local.get $c)))
              (then
                (local.set $e (call $number (local.get $p) (local.get $end)))
                (local.set $kind (i32.const 5)))
              (else
                ;; true, false, null, read as little-endian words.
                (local.set $e (i32.const -1))
                (if (i32.le_u (i32.add (local.get $p) (i32.const 4)) (local.get $end))
                  (then
                    (local.set $q (i32.load (local.get $p)))
                    (if (i32.eq (local.get $q) (i32.const 0x65757274))
                      (then (local.set $e (i32.add (local.get $p) (i32.const 4))) (local.set $kind (i32.const 6))))
                    (if (i32.eq (local.get $q) (i32.const 0x6c6c756e))
                      (then (local.set $e (i32.add (local.get $p) (i32.const 4))) (local.set $kind (i32.const 8))))
                    (if (i32.and
                          (i32.eq (local.get $q) (i32.const 0x736c6166))
                          (i32.le_u (i32.add (local.get $p) (i32.const 5)) (local.get $end)))
                      (then
                        (if (i32.eq (i32.load8_u offset=4 (local.get $p)) (i32.const 0x65))
                          (then (local.set $e (i32.add (local.get $p) (i32.const 5))) (local.set $kind (i32.const 7))))))))))
            (br_if $invalid (i32.lt_s (local.get $e) (i32.const 0)))
            (if (i32.lt_u (local.get $d) (local.get $limit))
              (then
                (call $emit (i32.or (local.get $kind) (i32.shl (local.get $d) (i32.const 8)))
                  (local.get $p) (local.get $e))))
            (local.set $p (local.get $e)))
          ;; A value ended at $p: close containers and take a comma until the next value starts.
          (loop $close
            ;; The value of an unwatched key ended: the tape takes the next key again.
            (if (i32.eq (local.get $d) (local.get $limit))
              (then (local.set $limit (i32.add (local.get $max) (i32.const 1)))))
            (local.set $p (call $ws (local.get $p) (local.get $end)))
            (if (i32.eqz (local.get $d))
              (then
                (br_if $invalid (i32.ne (local.get $p) (local.get $end)))
                (br_if $full (i32.gt_u (global.get $n) (i32.const 65536)))
                (return (global.get $n))))
            (br_if $invalid (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $c (i32.load8_u (local.get $p)))
            ;; Whether the innermost open container is an object.
            (local.set $q (i32.load8_u (i32.add (i32.const 0x6dffff) (local.get $d))))
            (if (i32.eq (local.get $c) (i32.const 0x2c))
              (then
                (local.set $p (i32.add (local.get $p) (i32.const 1)))
                (if (local.get $q)
                  (then
                    (local.set $p (call $key (local.get $p) (local.get $end) (local.get $d) (local.get $limit)))
                    (br_if $invalid (i32.lt_s (local.get $p) (i32.const 0)))
                    (local.set $limit (call $quiet (local.get $d) (local.get $limit)))))
                (br $value)))
            (br_if $invalid (i32.ne (local.get $c) (select (i32.const 0x7d) (i32.const 0x5d) (local.get $q))))
            (local.set $d (i32.sub (local.get $d) (i32.const 1)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (call $closed (local.get $d) (local.get $limit) (local.get $p))
            (br $close))))
      (return (i32.const -2)))
    (i32.const -1)))
