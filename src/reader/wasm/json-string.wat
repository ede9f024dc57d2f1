;; A JSON string body's scan, 32 bytes at a time (json-scan.ts scanString hands it the
;; rest of a long string). The reader's line scans spend most of their time inside string
;; bodies, and JavaScript can look at only four bytes a step there; WebAssembly's SIMD looks at
;; 32. It validates exactly as JSON.parse does: a raw byte below 0x20 ends the scan invalid, and
;; so does a backslash not followed by one of JSON's escapes (\u with four hex digits).
;;
;; The line is copied into this memory first (json-scan.ts mirrorLine, long-strings.ts): its
;; first 2 MiB hold it, the longest line it takes; longer lines are scanned by the JavaScript
;; loop alone. Above them: the bytes long string values unescape to (2 MiB and a step of slack,
;; as no escape grows), then the list of those values (4,096 of 16 bytes: a value of at least
;; 512 bytes in a 2 MiB line leaves room for fewer). 66 pages; the memory never grows, so the
;; views JavaScript reads and copies through stay valid.
;;
;; Built into src/reader/wasm/json-string.ts by scripts/build-wasm.ts (npm run build:wasm);
;; test/reader/wasm.test.ts checks the two agree.
(module
  (memory (export "memory") 66)
  ;; Where the next unescaped value goes (long-strings.ts sets it to OUT before a line).
  (global $out (export "out") (mut i32) (i32.const 0x200000))
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
  ;; The value of four hex digits at $p (checked by $string before).
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
  ;; Unescapes the string body [$p, $end), which $string found valid, to UTF-8 at $out, and moves
  ;; $out past it: as JSON.parse reads the body, written as the UTF-8 that decodes to the same
  ;; characters. -1 (nothing promised of $out) for an escaped surrogate not in a pair: JSON.parse
  ;; makes it a lone surrogate, which no UTF-8 decodes to, so the caller parses that line whole.
  (func $unescape (param $p i32) (param $end i32) (result i32)
    (local $o i32) (local $v v128) (local $m i32) (local $c i32) (local $u i32) (local $lo i32)
    (local.set $o (global.get $out))
    (loop $run
      ;; Copy up to the next backslash, 16 bytes a round (a round stores all 16 and keeps those
      ;; before the backslash: the slack above the output takes the rest), then byte by byte.
      (block $escape
        (block $narrow
          (loop $wide
            (br_if $narrow (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $end)))
            (local.set $v (v128.load (local.get $p)))
            (v128.store (local.get $o) (local.get $v))
            (local.set $m
              (i8x16.bitmask
                (i8x16.eq (local.get $v) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c))))
            (if (local.get $m)
              (then
                (local.set $p (i32.add (local.get $p) (i32.ctz (local.get $m))))
                (local.set $o (i32.add (local.get $o) (i32.ctz (local.get $m))))
                (br $escape)))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (local.set $o (i32.add (local.get $o) (i32.const 16)))
            (br $wide)))
        (loop $bytes
          (if (i32.ge_u (local.get $p) (local.get $end))
            (then
              (global.set $out (local.get $o))
              (return (local.get $o))))
          (local.set $c (i32.load8_u (local.get $p)))
          (br_if $escape (i32.eq (local.get $c) (i32.const 0x5c)))
          (i32.store8 (local.get $o) (local.get $c))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (local.set $o (i32.add (local.get $o) (i32.const 1)))
          (br $bytes)))
      ;; $p is at a backslash.
      (local.set $c (i32.load8_u offset=1 (local.get $p)))
      (if (i32.ne (local.get $c) (i32.const 0x75))
        (then
          ;; One of the seven short escapes; \" \\ and \/ stand for themselves.
          (i32.store8 (local.get $o)
            (if (result i32) (i32.eq (local.get $c) (i32.const 0x6e)) (then (i32.const 0x0a))
              (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x74)) (then (i32.const 0x09))
                (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x72)) (then (i32.const 0x0d))
                  (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x62)) (then (i32.const 0x08))
                    (else (if (result i32) (i32.eq (local.get $c) (i32.const 0x66)) (then (i32.const 0x0c))
                      (else (local.get $c))))))))))))
          (local.set $o (i32.add (local.get $o) (i32.const 1)))
          (local.set $p (i32.add (local.get $p) (i32.const 2)))
          (br $run)))
      (local.set $u (call $hex4 (i32.add (local.get $p) (i32.const 2))))
      (local.set $p (i32.add (local.get $p) (i32.const 6)))
      (if (i32.eq (i32.and (local.get $u) (i32.const 0xf800)) (i32.const 0xd800))
        (then
          ;; A surrogate: a high one followed by an escaped low one is one character.
          (if (i32.ge_u (local.get $u) (i32.const 0xdc00)) (then (return (i32.const -1))))
          (if (i32.gt_u (i32.add (local.get $p) (i32.const 6)) (local.get $end)) (then (return (i32.const -1))))
          (if (i32.ne (i32.load16_u (local.get $p)) (i32.const 0x755c)) (then (return (i32.const -1))))
          (local.set $lo (call $hex4 (i32.add (local.get $p) (i32.const 2))))
          (if (i32.ne (i32.and (local.get $lo) (i32.const 0xfc00)) (i32.const 0xdc00)) (then (return (i32.const -1))))
          (local.set $p (i32.add (local.get $p) (i32.const 6)))
          (local.set $u
            (i32.add (i32.const 0x10000)
              (i32.or
                (i32.shl (i32.sub (local.get $u) (i32.const 0xd800)) (i32.const 10))
                (i32.sub (local.get $lo) (i32.const 0xdc00)))))
          (i32.store8 (local.get $o) (i32.or (i32.const 0xf0) (i32.shr_u (local.get $u) (i32.const 18))))
          (i32.store8 offset=1 (local.get $o) (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $u) (i32.const 12)) (i32.const 0x3f))))
          (i32.store8 offset=2 (local.get $o) (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $u) (i32.const 6)) (i32.const 0x3f))))
          (i32.store8 offset=3 (local.get $o) (i32.or (i32.const 0x80) (i32.and (local.get $u) (i32.const 0x3f))))
          (local.set $o (i32.add (local.get $o) (i32.const 4)))
          (br $run)))
      (if (i32.lt_u (local.get $u) (i32.const 0x80))
        (then
          (i32.store8 (local.get $o) (local.get $u))
          (local.set $o (i32.add (local.get $o) (i32.const 1)))
          (br $run)))
      (if (i32.lt_u (local.get $u) (i32.const 0x800))
        (then
          (i32.store8 (local.get $o) (i32.or (i32.const 0xc0) (i32.shr_u (local.get $u) (i32.const 6))))
          (i32.store8 offset=1 (local.get $o) (i32.or (i32.const 0x80) (i32.and (local.get $u) (i32.const 0x3f))))
          (local.set $o (i32.add (local.get $o) (i32.const 2)))
          (br $run)))
      (i32.store8 (local.get $o) (i32.or (i32.const 0xe0) (i32.shr_u (local.get $u) (i32.const 12))))
      (i32.store8 offset=1 (local.get $o) (i32.or (i32.const 0x80) (i32.and (i32.shr_u (local.get $u) (i32.const 6)) (i32.const 0x3f))))
      (i32.store8 offset=2 (local.get $o) (i32.or (i32.const 0x80) (i32.and (local.get $u) (i32.const 0x3f))))
      (local.set $o (i32.add (local.get $o) (i32.const 3)))
      (br $run))
    (i32.const -1))
  ;; The string values of at least $min bytes in the JSON text [$p, $end) of the mirrored line,
  ;; listed from entry $k on (at LIST, 16 bytes each: the body's first byte, its closing quote,
  ;; and where its unescaped bytes lie at $out, or -1 -1 for a body without escapes, which reads
  ;; as it is): the new count. Keys are not listed (a string followed by a colon). Text outside
  ;; strings is only stepped over: JSON.parse judges it in the text the caller makes. -1 for a
  ;; string that does not end validly, an escaped lone surrogate, or a full list: the caller
  ;; parses the line whole.
  (func (export "spans") (param $p i32) (param $end i32) (param $min i32) (param $k i32) (result i32)
    (local $s i32) (local $r i32) (local $q i32) (local $n i32) (local $c i32) (local $at i32) (local $o i32)
    (loop $outside
      (block $quote
        (loop $bytes
          (if (i32.ge_u (local.get $p) (local.get $end)) (then (return (local.get $k))))
          (br_if $quote (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x22)))
          (local.set $p (i32.add (local.get $p) (i32.const 1)))
          (br $bytes)))
      (local.set $s (i32.add (local.get $p) (i32.const 1)))
      (local.set $r (call $string (local.get $s) (local.get $end)))
      (if (i32.lt_s (local.get $r) (i32.const 0)) (then (return (i32.const -1))))
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
              (if (i32.ge_u (local.get $k) (i32.const 4096)) (then (return (i32.const -1))))
              (local.set $at (i32.add (i32.const 0x410000) (i32.shl (local.get $k) (i32.const 4))))
              (i32.store (local.get $at) (local.get $s))
              (i32.store offset=4 (local.get $at) (local.get $q))
              (i32.store offset=8 (local.get $at) (i32.const -1))
              (i32.store offset=12 (local.get $at) (i32.const -1))
              (if (i32.and (local.get $r) (i32.const 0x40000000))
                (then
                  (local.set $o (global.get $out))
                  (if (i32.lt_s (call $unescape (local.get $s) (local.get $q)) (i32.const 0))
                    (then (return (i32.const -1))))
                  (i32.store offset=8 (local.get $at) (local.get $o))
                  (i32.store offset=12 (local.get $at) (global.get $out))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))))))
      (br $outside))
    (i32.const -1)))
