set terminal pngcairo size 1150,600
set output 'docs/papers/primepar-rings-dgx-a100.png'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'micro-batch (sequences)'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'primepar-rings-dgx-a100' font ',14'
set title ''
plot 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && strcol(3) eq '2') ? $6 * 1 : 1/0) with linespoints lw 2 pt 1 title 'ring 2', \
  'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && strcol(3) eq '4') ? $6 * 1 : 1/0) with linespoints lw 2 pt 2 title 'ring 4', \
  'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && strcol(3) eq '8') ? $6 * 1 : 1/0) with linespoints lw 2 pt 3 title 'ring 8'
unset multiplot
set terminal svg size 1150,600
set output 'docs/papers/primepar-rings-dgx-a100.svg'
set datafile separator ','
set grid
set termoption noenhanced
set key outside right top vertical box opaque
set xlabel 'micro-batch (sequences)'
set ylabel 'model TFLOP/s per GPU'
set multiplot layout 1,1 title 'primepar-rings-dgx-a100' font ',14'
set title ''
plot 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && strcol(3) eq '2') ? $6 * 1 : 1/0) with linespoints lw 2 pt 1 title 'ring 2', \
  'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && strcol(3) eq '4') ? $6 * 1 : 1/0) with linespoints lw 2 pt 2 title 'ring 4', \
  'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && strcol(3) eq '8') ? $6 * 1 : 1/0) with linespoints lw 2 pt 3 title 'ring 8'
unset multiplot
