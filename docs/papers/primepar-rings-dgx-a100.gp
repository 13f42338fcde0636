set terminal pngcairo size 1200,640
set output 'docs/papers/primepar-rings-dgx-a100.png'
set datafile separator ','
set key outside below maxrows 4
set grid
set multiplot layout 1,2 title 'scenarios/papers/primepar-rings-dgx-a100.yaml' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'iteration time (s)'
plot 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '2') ? $5 : 1/0) with linespoints title 'strategy.ring=2' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '4') ? $5 : 1/0) with linespoints title 'strategy.ring=4' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '8') ? $5 : 1/0) with linespoints title 'strategy.ring=8' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'model TFLOP/s per GPU'
plot 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '2') ? $6 : 1/0) with linespoints title 'strategy.ring=2' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '4') ? $6 : 1/0) with linespoints title 'strategy.ring=4' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '8') ? $6 : 1/0) with linespoints title 'strategy.ring=8' noenhanced
unset multiplot
set terminal svg size 1200,640
set output 'docs/papers/primepar-rings-dgx-a100.svg'
set datafile separator ','
set key outside below maxrows 4
set grid
set multiplot layout 1,2 title 'scenarios/papers/primepar-rings-dgx-a100.yaml' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'iteration time (s)'
plot 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '2') ? $5 : 1/0) with linespoints title 'strategy.ring=2' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '4') ? $5 : 1/0) with linespoints title 'strategy.ring=4' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '8') ? $5 : 1/0) with linespoints title 'strategy.ring=8' noenhanced
set xlabel 'model.micro_batch' noenhanced
set ylabel 'model TFLOP/s per GPU'
plot 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '2') ? $6 : 1/0) with linespoints title 'strategy.ring=2' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '4') ? $6 : 1/0) with linespoints title 'strategy.ring=4' noenhanced, 'docs/papers/primepar-rings-dgx-a100.plot.csv' using ($2):((strcol(4) eq 'ok' && 1 && strcol(3) eq '8') ? $6 : 1/0) with linespoints title 'strategy.ring=8' noenhanced
unset multiplot
