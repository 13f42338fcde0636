set terminal pngcairo size 1150,600
set output 'docs/papers/primepar-dgx-a100.png'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'micro-batch (sequences)'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'primepar-dgx-a100' font ',14'
set title ''
plot 'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '2' && strcol(4) eq '1d') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title 'TP degree 2, strategy 1d', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '2' && strcol(4) eq 'primepar') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title 'TP degree 2, strategy primepar', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '4' && strcol(4) eq '1d') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title 'TP degree 4, strategy 1d', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '4' && strcol(4) eq 'primepar') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title 'TP degree 4, strategy primepar', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '8' && strcol(4) eq '1d') ? $7 * 1 : 1/0) with linespoints lw 2 pt 5 title 'TP degree 8, strategy 1d', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '8' && strcol(4) eq 'primepar') ? $7 * 1 : 1/0) with linespoints lw 2 pt 6 title 'TP degree 8, strategy primepar'
unset multiplot
set terminal svg size 1150,600
set output 'docs/papers/primepar-dgx-a100.svg'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'micro-batch (sequences)'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'primepar-dgx-a100' font ',14'
set title ''
plot 'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '2' && strcol(4) eq '1d') ? $7 * 1 : 1/0) with linespoints lw 2 pt 1 title 'TP degree 2, strategy 1d', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '2' && strcol(4) eq 'primepar') ? $7 * 1 : 1/0) with linespoints lw 2 pt 2 title 'TP degree 2, strategy primepar', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '4' && strcol(4) eq '1d') ? $7 * 1 : 1/0) with linespoints lw 2 pt 3 title 'TP degree 4, strategy 1d', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '4' && strcol(4) eq 'primepar') ? $7 * 1 : 1/0) with linespoints lw 2 pt 4 title 'TP degree 4, strategy primepar', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '8' && strcol(4) eq '1d') ? $7 * 1 : 1/0) with linespoints lw 2 pt 5 title 'TP degree 8, strategy 1d', \
  'docs/papers/primepar-dgx-a100.plot.csv' using ($2):((strcol(5) eq 'ok' && strcol(3) eq '8' && strcol(4) eq 'primepar') ? $7 * 1 : 1/0) with linespoints lw 2 pt 6 title 'TP degree 8, strategy primepar'
unset multiplot
