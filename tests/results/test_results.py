"""scripts/results on a throw-away tree: the figures it derives against values worked out by
hand, the rewrite of a marked block, its byte-identical rerun and --check on a hand edit."""
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import shlex
import subprocess
import tempfile
import time
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'results')


def load():
    loader = importlib.machinery.SourceFileLoader('lowp_results', SCRIPT)
    spec = importlib.util.spec_from_loader('lowp_results', loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def run(name, rep, cpu_ms, real_ms, **counters):
    return dict(name=name, run_name=name, run_type='iteration', repetition_index=rep, repetitions=3,
                threads=1, iterations=1, cpu_time=cpu_ms, real_time=real_ms, time_unit='ms', **counters)


class Results(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        os.makedirs(os.path.join(root, 'bench', 'results'))
        os.makedirs(os.path.join(root, 'docs'))
        # Per repetition, CPU ms: base 4, 4, 9 and fast 2, 4, 3, so the per-repetition speed
        # ratios are 2, 1, 3 (median 2) while the ratio of the medians would be 4 / 3.
        # Wall ms: base 10, 10, 10 and fast 5, 5, 20: ratios 2, 2, 0.5 (median 2).
        benches = [run('BM_base', i, c, w, items_per_second=1e9) for i, (c, w) in enumerate([(4, 10), (4, 10), (9, 10)])]
        benches += [run('BM_fast', i, c, w, items_per_second=2e9, rmse=0.0151) for i, (c, w) in enumerate([(2, 5), (4, 5), (3, 20)])]
        benches.append(dict(name='BM_fast_median', run_name='BM_fast', run_type='aggregate', aggregate_name='median',
                            cpu_time=999, real_time=999, time_unit='ms'))
        context = dict(date='2026-01-01T00:00:00+00:00', num_cpus=2, mhz_per_cpu=2000, cpu_model='Test CPU',
                       lowp_best_isa='avx2', compiler='GCC 12', caches=[dict(type='Data', level=1, size=32768)])
        with open(os.path.join(root, 'bench', 'results', 'toy.json'), 'w') as f:
            json.dump(dict(context=context, benchmarks=benches), f)
        with open(os.path.join(root, 'bench', 'results', 'toy.cmd'), 'w') as f:
            f.write('command: build/bin/bench_toy --benchmark_repetitions=3\ncommit: abc\nload: 1.0 at the start, 2.0 at the end\n')
        self.doc = os.path.join(root, 'bench', 'RESULTS.md')
        with open(self.doc, 'w') as f:
            f.write('# T\n\nprose\n\n<!-- results:toy -->\nold typed numbers\n<!-- /results:toy -->\n\nafter\n')
        self.m = load()
        m = self.m
        m.ROOT, m.RESULTS, m.DOCS = root, os.path.join(root, 'bench', 'results'), ['bench/RESULTS.md']
        m.TABLES = [m.Table('toy', 'toy', m.Bench, rows=lambda b: b.names(r'BM_\w+'),
                            columns=[('benchmark', lambda b, r: m.code(r)),
                                     ('G/s', lambda b, r: m.sig(b.value(r, 'items_per_second') / 1e9))]
                            + m.timing_columns(lambda r: 'BM_base'))]

    def tearDown(self):
        self.tmp.cleanup()

    def quiet(self, fn, *args):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = fn(*args)
        return rc, err.getvalue()

    def text(self):
        with open(self.doc) as f:
            return f.read()

    def test_ratio_is_the_median_of_per_repetition_ratios(self):
        b = self.m.Bench('toy')
        self.assertEqual(b.ratio('BM_fast', 'BM_base', 'cpu'), 2.0)
        self.assertEqual(b.ratio('BM_fast', 'BM_base', 'real'), 2.0)
        self.assertEqual(b.time('BM_fast', 'cpu'), 3e-3)  # the aggregate row (999 ms) is not a repetition
        self.assertEqual(b.value('BM_fast', 'rmse'), 0.0151)

    def test_formats(self):
        self.assertEqual(self.m.sci(0.0151), '1.51e-2')
        self.assertEqual(self.m.sci(8.336e-3), '8.34e-3')
        self.assertEqual(self.m.sci(123456.0), '1.23e5')
        self.assertEqual(self.m.sig(123.456), '123')
        self.assertEqual(self.m.sig(0.0123456), '0.0123')

    def test_rewrite_then_rerun_is_byte_identical_and_check_passes(self):
        self.assertEqual(self.quiet(self.m.generate, False)[0], 0)
        first = self.text()
        self.assertIn('| `BM_fast` | 2.00 | 3.00 | 5.00 | 2.00× | 2.00× |', first)
        self.assertIn('Command: `build/bin/bench_toy --benchmark_repetitions=3`', first)
        self.assertIn('Test CPU, 2 CPUs at 2000 MHz, L1d 32 KiB; lowp ISA avx2; GCC 12', first)
        self.assertTrue(first.startswith('# T\n\nprose\n\n<!-- results:toy -->\n'))
        self.assertTrue(first.endswith('<!-- /results:toy -->\n\nafter\n'))
        self.assertNotIn('old typed numbers', first)
        self.assertEqual(self.quiet(self.m.generate, False)[0], 0)
        self.assertEqual(self.text(), first)
        self.assertEqual(self.quiet(self.m.generate, True)[0], 0)

    def test_check_fails_on_a_hand_edit_and_leaves_the_file(self):
        self.quiet(self.m.generate, False)
        edited = self.text().replace('| 2.00× | 2.00× |', '| 2.10× | 2.00× |')
        with open(self.doc, 'w') as f:
            f.write(edited)
        rc, err = self.quiet(self.m.generate, True)
        self.assertEqual(rc, 1)
        self.assertIn('stale', err)
        self.assertIn('bench/RESULTS.md: results:toy', err)
        self.assertEqual(self.text(), edited)

    def test_unknown_block_and_missing_output_fail(self):
        with open(self.doc, 'a') as f:
            f.write('<!-- results:nosuch -->\n<!-- /results:nosuch -->\n')
        rc, err = self.quiet(self.m.generate, True)
        self.assertEqual(rc, 1)
        self.assertIn('results:nosuch has no table', err)
        os.remove(os.path.join(self.m.RESULTS, 'toy.cmd'))
        rc, err = self.quiet(self.m.generate, True)
        self.assertEqual(rc, 1)
        self.assertIn('toy.cmd: missing', err)

    def test_record_keeps_the_output_with_its_command(self):
        m = self.m
        script = "printf 'recipe\\nfp32\\n' > out.csv"
        saved = dict(os.environ)
        try:  # the command line names the OMP_ and LOWP_ settings it ran under
            for k in [k for k in os.environ if k.startswith(('OMP_', 'LOWP_'))]:
                del os.environ[k]
            os.environ['OMP_WAIT_POLICY'] = 'passive'
            rc, _ = self.quiet(m.record, ['toy2', '--output', 'out.csv', '--', 'sh', '-c', script])
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.assertEqual(rc, 0)
        with open(os.path.join(m.RESULTS, 'toy2.csv')) as f:
            self.assertEqual(f.read(), 'recipe\nfp32\n')
        side = m.read_sidecar('toy2')
        self.assertEqual(side['command'], 'OMP_WAIT_POLICY=passive sh -c ' + shlex.quote(script))
        self.assertEqual(side['output'], 'out.csv')
        self.assertIn('CPUs', side['cpu'])
        # A command that fails keeps nothing; one that is not a benchmark needs --output.
        rc, err = self.quiet(m.record, ['toy3', '--output', 'none.csv', '--', 'sh', '-c', 'exit 3'])
        self.assertEqual(rc, 1)
        self.assertFalse(os.path.exists(os.path.join(m.RESULTS, 'toy3.cmd')))
        rc, err = self.quiet(m.record, ['toy4', '--', 'sh', '-c', 'true'])
        self.assertEqual(rc, 2)
        self.assertIn('not a Google Benchmark binary', err)
        # A benchmark's output file is record's to name: one given as well is refused, not doubled.
        rc, err = self.quiet(m.record, ['toy6', '--', 'bench_toy', '--benchmark_out=elsewhere.json'])
        self.assertEqual(rc, 2)
        self.assertIn('drop --benchmark_out', err)
        self.assertFalse(os.path.exists(os.path.join(m.RESULTS, 'toy6.cmd')))

    def test_record_keeps_nothing_from_a_run_that_did_not_write_its_output(self):
        # A peer script that skips exits 0 and leaves the file of an earlier run in place.
        m = self.m
        rc, _ = self.quiet(m.record, ['toy7', '--output', 'out.csv', '--', 'sh', '-c', "printf 'a\\n' > out.csv"])
        self.assertEqual(rc, 0)
        with open(os.path.join(m.RESULTS, 'toy7.cmd')) as f:
            side = f.read()
        rc, err = self.quiet(m.record, ['toy7', '--output', 'out.csv', '--', 'sh', '-c', 'echo skip: no peer'])
        self.assertEqual(rc, 1)
        self.assertIn('did not write out.csv', err)
        with open(os.path.join(m.RESULTS, 'toy7.cmd')) as f:
            self.assertEqual(f.read(), side)

    def test_record_replaces_a_benchmark_output_only_after_a_clean_exit(self):
        # A stand-in benchmark binary: writes its --benchmark_out file, then exits with $1.
        m = self.m
        self.write('bin/bench_toy', '#!/bin/sh\nfor a; do case "$a" in --benchmark_out=*) '
                   'printf \'{"run": "%s"}\' "$1" > "${a#--benchmark_out=}";; esac; done\nexit "$1"\n')
        binary = os.path.join(self.tmp.name, 'bin', 'bench_toy')
        os.chmod(binary, 0o755)
        out = os.path.join(m.RESULTS, 'toy8.json')
        rc, _ = self.quiet(m.record, ['toy8', '--', binary, '0'])
        self.assertEqual(rc, 0)
        with open(out) as f:
            self.assertEqual(f.read(), '{"run": "0"}')
        # The sidecar names the file a reader's rerun writes, not the one record renamed.
        self.assertTrue(m.read_sidecar('toy8')['command'].endswith(
            '--benchmark_out=bench/results/toy8.json --benchmark_out_format=json'))
        rc, err = self.quiet(m.record, ['toy8', '--', binary, '3'])  # wrote its file, then failed
        self.assertEqual(rc, 1)
        self.assertIn('exited 3', err)
        with open(out) as f:
            self.assertEqual(f.read(), '{"run": "0"}')
        self.assertEqual(sorted(f for f in os.listdir(m.RESULTS) if f.startswith('toy8')), ['toy8.cmd', 'toy8.json'])

    def write(self, rel, text):
        path = os.path.join(self.tmp.name, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)

    def test_calibration_table_ratios_and_least_in_bold(self):
        # KLD (SE) by spec: RTN, imatrix, GPTQ, AWQ, then llama.cpp's matrix from the second run.
        # mxfp4's least is the second run's cell, so the bold spans both files.
        kld = {'int4-g32': [0.02, 0.015, 0.01, 0.021, 0.0152], 'mxfp4': [0.04, 0.03, 0.034, 0.05, 0.024],
               'nvfp4': [0.01, 0.009, 0.005, 0.011, 0.009]}
        methods = ['rtn', 'imatrix', 'gptq', 'awq']
        a = 'recipe,kld_mean,kld_se,seconds,error\n' + ''.join(
            f'{s}.{m},{v[i]},{v[i] / 20},{i + 1},\n' for s, v in kld.items() for i, m in enumerate(methods))
        b = 'recipe,kld_mean,kld_se,seconds,error\n' + ''.join(f'{s}.imatrix,{v[4]},{v[4] / 20},9,\n' for s, v in kld.items())
        self.write('bench/results/ca.csv', a)
        self.write('bench/results/cb.csv', b)
        for stem in ('ca', 'cb'):
            self.write(f'bench/results/{stem}.cmd', f'command: bench/calibration/run {stem} out.csv\n')
        for s, w in (('int4-g32', 'int4:b32:int'), ('mxfp4', 'mxfp4'), ('nvfp4', 'nvfp4')):
            self.write(f'bench/calibration/recipes/{s}.rtn.txt', f'name = {s}.rtn\nweights = {w}\npad = on\n')
        text = self.m.calib_table('cal', 'ca+cb').render()
        self.assertIn('from bench/results/ca.*, bench/results/cb.* -->', text)
        self.assertIn('| int4-g32 (`int4:b32:int`) (5.0) | 0.0200 ± 0.0010 | 0.0150 ± 0.0008 (0.75×) | '
                      '**0.0100 ± 0.0005 (0.50×)** | 0.0210 ± 0.0011 (1.05×) | 0.0152 ± 0.0008 (0.76×) |', text)
        self.assertIn('| mxfp4 (`mxfp4`) (4.25) | 0.0400 ± 0.0020 | 0.0300 ± 0.0015 (0.75×) | 0.0340 ± 0.0017 (0.85×) | '
                      '0.0500 ± 0.0025 (1.25×) | **0.0240 ± 0.0012 (0.60×)** |', text)
        self.assertIn("- imatrix: 0.75-0.90× RTN's KLD over the three specs.", text)
        self.assertIn("- GPTQ: 0.50-0.85× RTN's KLD over the three specs.", text)
        self.assertIn("- The least KLD: int4-g32 GPTQ, mxfp4 imatrix, llama.cpp's file, nvfp4 GPTQ.", text)
        self.assertIn("differ by at most 0.150× RTN's.", text)  # mxfp4: |0.024 - 0.03| / 0.04
        self.assertIn('RTN 3.0, imatrix 6.0, GPTQ 9.0, AWQ 12.0.', text)

    def test_search_table(self):
        self.write('bench/results/se.csv', 'recipe,kind,bits_per_weight,predicted_kld,kld_mean,kld_se,ln_ppl_ratio,file\n'
                   'search-5,searched,4.9954,0.0139733,0.011016,0.00079,0.003,r-5.txt\n'
                   'uniform int4,uniform,5,0.1068,0.0805,0.01,-0.04,\n'
                   'modelA-Q4_0,llama.cpp,4.658653846,nan,0.0746107,0.00894992,0.026,modelA-Q4_0.gguf\n')
        self.write('bench/results/se.cmd', 'command: lowp search\n')
        text = self.m.search_table('se').render()
        self.assertIn('| search-5 | 4.995 | 1.40e-2 | 1.10e-2 ± 7.9e-4 | 0.79 |', text)  # 0.011016 / 0.0139733 = 0.788
        self.assertIn('| llama.cpp modelA-Q4_0 | 4.659 | — | 7.46e-2 ± 8.9e-3 | — |', text)
        self.assertIn('over the searched and uniform recipes: 0.75-0.79.', text)  # 0.0805 / 0.1068 = 0.754

    def test_gtest_properties_tables(self):
        # Errors (Y, dX, dW) then bounds: bound/error ratios 2, 4, 1.5 (a) and 3, 2.5, 2 (b).
        props = {'fp32': '0 0 0 0 0 0', 'fp8-rowwise': '0.01 0.02 0.04 0.02 0.08 0.06',
                 'fp8-tensorwise': '0.03 0.05 0.05 0.09 0.125 0.1', 'mxfp8': '0.04 0.04 0.04 0.12 0.12 0.12',
                 'mxfp6': '0.13 0.04 0.04 0.11 0.11 0.11', 'nvfp4-train': '0.1 0.2 0.3 0.35 0.5 0.6'}
        tests = [dict(name='EveryPresetWithinItsToleranceOfFp32', status='RUN', result='COMPLETED', time='1s', **props),
                 dict(name='QuartetBackwardIsUnbiased', result='COMPLETED', **{'seed_means q': '0.08 0.04 0.01 0.06 0.03 0.015'})]
        failed = dict(name='Other', result='COMPLETED', failures=[dict(failure='x')])
        self.write('bench/results/lp.json', json.dumps(dict(testsuites=[dict(name='LinearPresets', testsuite=tests)])))
        self.write('bench/results/lp.cmd', 'command: build/bin/test_linear\n')
        text = self.m.Table('preset_errors', 'lp', self.m.GTest, rows=self.m.PRESET_ERRORS.rows,
                            columns=self.m.PRESET_ERRORS.columns, after=self.m.PRESET_ERRORS.after).render()
        self.assertIn('| fp32 | 0 | 0 | 0 |', text)
        self.assertIn('| fp8-rowwise | 0.01 (0.02) | 0.02 (0.08) | 0.04 (0.06) |', text)
        # Least 0.846 (mxfp6 Y: 0.11 / 0.13), most 4 (fp8-rowwise dX).
        self.assertIn('- The bound is 0.85× (mxfp6 Y) to 4.00× (fp8-rowwise dX) the error; 2.00× for fp8-rowwise Y, '
                      '2.50× and 2.00× for nvfp4-train dX and dW.', text)
        self.assertIn("dX error (E5M2 dY), 0.05, is under fp8-rowwise's E4M3 bound, 0.08; mxfp6's Y error, 0.13, is "
                      "over mxfp8's bound, 0.12.", text)
        seeds = self.m.Table('seed_means', 'lp', self.m.GTest, rows=self.m.SEED_MEANS.rows,
                             columns=self.m.SEED_MEANS.columns, after=self.m.SEED_MEANS.after).render()
        self.assertIn('| q | 0.08 | 0.04 | 0.01 | 0.06 | 0.03 | 0.015 | `LinearPresets.QuartetBackwardIsUnbiased` |', seeds)
        self.assertIn('falls by 2.00× to 4.00×', seeds)  # 0.08/0.04, 0.04/0.01, 0.06/0.03, 0.03/0.015
        self.write('bench/results/lp.json', json.dumps(dict(testsuites=[dict(name='LinearPresets', testsuite=tests + [failed])])))
        with self.assertRaisesRegex(self.m.DataError, 'LinearPresets.Other failed'):
            self.m.GTest('lp')

    def test_probe_table_reads_the_last_stop(self):
        head = 'recipe,step,layer,tensor,gemm,rel_mse,rel_mse_lo,rel_mse_hi,bias2,bias2_lo,bias2_hi,variance,cosine,proj,noise_ratio,loss_delta\n'
        rows = []
        for rec, base, noise in (('mxfp8', 1e-4, 80), ('nvfp4', 1e-3, 1.5), ('quartet-fp4', 2e-3, 10)):
            for step, f in ((0, 100), (50, 1)):  # step 0's figures are 100x: a table of step 0 fails
                rows.append(f'{rec},{step},-1,model,grad,{base * f},{base * f / 2},{base * f * 2},{base * f},0,0,0,0.99,1,{noise},1e-3')
                rows.append(f'{rec},{step},0,wq,fwd,9,9,9,9,0,0,0,0.9,1,1,')  # a per-linear row: not the model's
                for i, g in enumerate(('fwd', 'dgrad', 'wgrad')):
                    rows.append(f'{rec},{step},-1,model,{g},{base * f * (i + 1)},0,0,0,0,0,0,0.9,1,1,')
        self.write('bench/results/pr.csv', head + '\n'.join(rows) + '\n')
        self.write('bench/results/pr.cmd', 'command: lowp probe\n')
        m = self.m
        text = m.Table('probe_tiny', 'pr', m.Csv, rows=m.PROBE_TINY.rows, columns=m.PROBE_TINY.columns, after=m.PROBE_TINY.after).render()
        self.assertIn('| nvfp4 | 1.00e-3 [5.00e-4, 2.00e-3] | 1.00e-3 | 0 | 0.990000 | 1.50 | 1.00e-3 | 2.00e-3 | 3.00e-3 | 1.00e-3 |', text)
        self.assertIn('- The largest single GEMM error (all linears): quartet-fp4 wgrad, rel_mse 6.00e-3.', text)
        self.assertIn("- The 4-bit recipe whose whole gradient is closest to fp32's: nvfp4 (rel_mse 1.00e-3).", text)
        self.assertIn('- Noise ratio below √3 (the recipe would stall): nvfp4.', text)

    def test_rank_statistics_against_published_values(self):
        m = self.m
        # Student's t critical values from a printed table (two-sided 5% and 1%): p back exactly.
        for t, nu, p in [(12.706, 1, 0.05), (4.303, 2, 0.05), (3.182, 3, 0.05), (2.776, 4, 0.05), (2.131, 15, 0.05),
                         (2.947, 15, 0.01), (2.845, 20, 0.01)]:
            self.assertAlmostEqual(m.t_two_sided(t, nu), p, delta=2e-4, msg=(t, nu))
        self.assertEqual(m.t_two_sided(0.0, 7), 1.0)
        self.assertEqual(m.ranks([3, 1, 3, 2]), [3.5, 1.0, 3.5, 2.0])
        # Worked by hand: ranks y = 1, 2, 3.5, 5, 3.5 against 1..5 give rho = 8 / sqrt(10 * 9.5);
        # t = rho sqrt(3 / (1 - rho^2)) = 2.489, and 3 degrees of freedom give p = 0.0886.
        rho, p = m.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
        self.assertAlmostEqual(rho, 8 / (10 * 9.5) ** 0.5, places=12)
        self.assertAlmostEqual(p, 0.0886, delta=5e-4)
        self.assertEqual(m.spearman([1, 2, 3], [30, 20, 10])[0], -1.0)

    def test_fuzz_table(self):
        self.write('bench/results/fz.csv', 'harness,seconds,wall_s,cpu_s,executions,cov,ft,peak_rss_mb,finding\n'
                   'gguf,30,31,29,45852,3438,6860,491,none\n'
                   'recipe,30,12,,1234,47,99,400,recipe-crash-abc\n')  # no /usr/bin/time: CPU unknown
        self.write('bench/results/fz.cmd', 'command: scripts/sanitize-check --fuzz-only --fuzz-seconds 30\n')
        m = self.m
        text = m.Table('fuzz', 'fz', m.Csv, rows=m.FUZZ.rows, columns=m.FUZZ.columns).render()
        self.assertIn('| `gguf` | 31 | 29 | 45,852 | 3,438 | 6,860 | 491 | none |', text)
        self.assertIn('| `recipe` | 12 | ? | 1,234 | 47 | 99 | 400 | recipe-crash-abc |', text)

    def test_record_names_uncommitted_files_whole(self):
        # `git status --porcelain` starts a modified file's line with a space (' M a.txt').
        root = self.tmp.name
        git = lambda *a: subprocess.run(['git', '-c', 'user.name=t', '-c', 'user.email=t@t', *a], cwd=root,
                                        capture_output=True, check=True)
        self.write('a.txt', 'one\n')
        git('init', '-q')
        git('add', 'a.txt')
        git('commit', '-qm', 'a')
        self.write('a.txt', 'two\n')
        # An hour old, so that the run's rewrite changes its mtime on a coarse file clock too.
        os.utime(os.path.join(root, 'a.txt'), (time.time() - 3600,) * 2)
        rc, _ = self.quiet(self.m.record, ['toy5', '--output', 'a.txt', '--', 'sh', '-c', "printf 'two\\n' > a.txt"])
        self.assertEqual(rc, 0)
        self.assertTrue(self.m.read_sidecar('toy5')['commit'].endswith(' with uncommitted changes to a.txt'))


if __name__ == '__main__':
    unittest.main()
