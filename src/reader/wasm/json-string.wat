;; A JSON string body's scan, 32 bytes at a time (json-scan.ts scanString hands it the
;; rest of a long string). The reader's line scans spend most of their time inside string
;; bodies, and JavaScript can look at only four bytes a step there; WebAssembly's SIMD looks at
;; 32. It validates exactly as JSON.parse does: a raw byte below 0x20 ends the scan invalid, and
;; so does a backslash not followed by one of JSON's escapes (\u with four hex digits).
;;
;; The line is copied into this memory first (json-scan.ts mirrorLine): 32 pages, 2 MiB, the
;; longest line it takes; longer lines are scanned by the JavaScript loop alone. The memory
;; never grows, so the view JavaScript copies through stays valid.
;;
;; Built into src/reader/wasm/json-string.ts by scripts/build-wasm.ts (npm run build:wasm);
;; test/reader/wasm.test.ts checks the two agree.
(module
  (memory (export "memory") 32)
  ;; Whether byte $c is an ASCII hex digit.
  (func $hex (param $c i32) (result i32)
    (i32.or
      (i32.lt_u (i32.sub (local.get $c) (i32.const 0x30)) (i32.const 10))
      (i32.lt_u (i32.sub (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x61)) (i32.const 6))))
  ;; Scans a string body from $p to its closing quote before $end: the quote's index, with bit 30
  ;; set when the body held an escape; -1 for a raw byte below 0x20, a bad escape, or no closing
  ;; quote. Every load lies inside [$p, $end): no byte after the line is read.
  (func (export "string") (param $p i32) (param $end i32) (result i32)
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
    (i32.const -1)))
