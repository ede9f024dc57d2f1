#!/usr/bin/env node
// The `conversation` bin: Node 24 or newer runs this file directly (type stripping).
import { runProcess } from "./main.ts";

await runProcess();
