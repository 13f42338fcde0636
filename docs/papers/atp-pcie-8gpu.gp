set terminal pngcairo size 1150,600
set output 'docs/papers/atp-pcie-8gpu.png'
set datafile separator ','
set grid
set termoption noenhanced
set xtics ('gpt3-1.3b' 0, 'gpt3-2.7b' 1, 'gpt3-6.7b' 2, 'gpt3-13b' 3) rotate by -30
set xrange [-0.5:3.5]
set key outside right top vertical box opaque
set xlabel 'model'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'atp-pcie-8gpu' font ',14'
set title ''
plot 'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[8 1]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title '2D mesh [8 1], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[8 1]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title '2D mesh [8 1], placement column-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[4 2]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title '2D mesh [4 2], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[4 2]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title '2D mesh [4 2], placement column-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[2 4]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 5 title '2D mesh [2 4], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[2 4]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 6 title '2D mesh [2 4], placement column-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[1 8]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 7 title '2D mesh [1 8], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[1 8]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 8 title '2D mesh [1 8], placement column-first'
unset multiplot
set terminal svg size 1150,600
set output 'docs/papers/atp-pcie-8gpu.svg'
set datafile separator ','
set grid
set termoption noenhanced
set xtics ('gpt3-1.3b' 0, 'gpt3-2.7b' 1, 'gpt3-6.7b' 2, 'gpt3-13b' 3) rotate by -30
set xrange [-0.5:3.5]
set key outside right top vertical box opaque
set xlabel 'model'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'atp-pcie-8gpu' font ',14'
set title ''
plot 'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[8 1]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title '2D mesh [8 1], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[8 1]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title '2D mesh [8 1], placement column-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[4 2]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title '2D mesh [4 2], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[4 2]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title '2D mesh [4 2], placement column-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[2 4]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 5 title '2D mesh [2 4], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[2 4]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 6 title '2D mesh [2 4], placement column-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[1 8]' && strcol(4) eq 'row-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 7 title '2D mesh [1 8], placement row-first', \
  'docs/papers/atp-pcie-8gpu.plot.csv' using (strcol(2) eq 'gpt3-1.3b' ? 0 : strcol(2) eq 'gpt3-2.7b' ? 1 : strcol(2) eq 'gpt3-6.7b' ? 2 : strcol(2) eq 'gpt3-13b' ? 3 : 1/0):((strcol(5) eq 'ok' && strcol(3) eq '[1 8]' && strcol(4) eq 'column-first') ? $7 * 1 : 1/0) with linespoints lw 2 pt 8 title '2D mesh [1 8], placement column-first'
unset multiplot
