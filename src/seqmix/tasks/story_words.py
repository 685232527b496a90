"""Word tables of the procedural story grammar (``story_gen``); about 1.2k distinct words in all."""

from __future__ import annotations


def _words(text: str) -> tuple[str, ...]:
    out = tuple(dict.fromkeys(text.split()))  # de-duplicated, order kept
    return out


NAMES_HE = _words(
    "Tom Ben Max Leo Sam Jack Finn Noah Eli Owen Luke Adam Theo Jake Milo Ryan Hugo Oscar Felix Ezra Liam Kai "
    "Omar Ravi Tariq Kenji Pablo Ivan Nico Arlo Jonah Caleb Silas Jasper Rowan Wes Dante Otis Abel Rufus "
    "Aaron Alan Albert Alex Andre Arthur August Axel Basil Blake Bruno Carl Cedric Charlie Colin Cyrus Dev "
    "Dylan Edgar Elliot Emil Ernest Evan Frank Gabe George Gus Harvey Henry Idris Isaac Jamal Jude Julian Karl "
    "Lars Louis Marco Mason Miles Morris Nate Ned Oliver Pete Quentin Ralph Reggie Rico Ross Simon Teddy Toby "
    "Victor Walter Xavier Yusuf Zane Angus Boris"
)
NAMES_SHE = _words(
    "Lily Mia Zoe Ella Ava Ruby Lucy Emma Nora Ivy Grace Rosa Hana Maya Aria Luna Iris Clara Daisy Hazel "
    "Anya Priya Leila Sofia Yuki Amara Nina Tess Willa June Freya Elsie Maple Olive Pearl Vera Alma Greta Wren "
    "Sage Abby Ada Agnes Alice Amelia Anna Beatrice Bella Bonnie Carmen Celia Chloe Cora Dora Edith Eliza Esme "
    "Fern Fiona Gemma Gloria Hattie Heidi Holly Ingrid Isla Jade Jenny Joy Kara Kira Lena Lola Lottie Mabel "
    "Martha Matilda Millie Molly Nell Opal Penny Poppy Quinn Rita Rose Sadie Selma Stella Tilly Una Violet "
    "Winnie Xena Yara Zara Bea Cleo Dot Elin"
)
ANIMALS = _words(
    "rabbit fox bear cat dog mouse owl duck frog turtle lion tiger horse goat sheep pig deer wolf squirrel "
    "hedgehog otter badger robot dragon bird penguin monkey elephant giraffe zebra panda koala whale kitten "
    "puppy lamb calf chick bunny hamster beaver raccoon mole bat crow robin sparrow parrot seal octopus crab "
    "snail bee ant butterfly moth beetle spider lizard snake camel llama yak moose bison hippo rhino kangaroo "
    "sloth lemur gorilla cheetah leopard ostrich swan goose hen rooster donkey pony unicorn giant elf troll "
    "fairy wizard knight pirate princess prince king queen farmer baker sailor"
)
PLACES = _words(
    "forest garden park beach river meadow village school library kitchen farm castle cave hill lake pond "
    "market town field mountain valley island harbor bakery museum zoo playground orchard barn attic jungle "
    "desert bridge tower station swamp marsh creek stream waterfall canyon cliff shore dune glacier volcano "
    "prairie grove woods thicket hollow den burrow nest treehouse cottage cabin hut tent palace greenhouse "
    "workshop studio classroom hallway basement cellar rooftop balcony porch yard alley street square fountain "
    "lighthouse dock pier ship cafe shop mill well chapel circus fair carnival stadium theater hospital office "
    "bank pool gym arena camp ranch vineyard quarry"
)
OBJECTS = _words(
    "ball kite box hat book map key lamp bell drum cup bag shell stone coin feather ribbon basket blanket boat "
    "car train doll puzzle flute guitar brush pencil crayon candle clock compass lantern mirror necklace ring "
    "scarf sock umbrella whistle wagon sled shovel bucket rope ladder jar bottle button pillow quilt seed "
    "flower leaf acorn apple pear cookie cake pie sandwich balloon star globe piano violin trumpet harp "
    "xylophone tambourine marble pebble crystal gem jewel crown sword shield helmet cape cloak boot shoe "
    "mitten glove belt badge medal trophy ticket letter postcard envelope stamp notebook diary journal "
    "sketchbook paintbrush easel canvas chalk eraser ruler scissors glue tape string yarn needle thimble "
    "spoon fork plate bowl kettle teapot pot pan oven stove chair table bench stool desk shelf cupboard "
    "drawer bed cradle rug curtain window door gate fence wheel bicycle scooter skateboard tricycle rocket "
    "airplane helicopter submarine canoe raft paddle oar anchor sail net fishing pole hook worm bone "
    "carrot turnip pumpkin melon lemon cherry plum peach banana orange grape berry mushroom pinecone twig "
    "branch log stick brick block cube cone pyramid ornament snowglobe snowman sandcastle seashell starfish "
    "telescope magnifier binoculars camera radio phone computer tablet watch bracelet brooch locket purse "
    "wallet backpack suitcase trunk chest treasure"
)
ADJECTIVES = _words(
    "small big old new shiny soft tiny heavy light strange funny magic broken lost round smooth bright dark "
    "warm cold fuzzy sparkly gentle quiet loud brave kind clever happy sleepy silly curious tall short long "
    "wide narrow secret special lucky golden wooden huge little giant enormous fluffy prickly bumpy rough "
    "sticky slippery wet dry dusty muddy clean dirty fresh stale sweet sour salty bitter spicy crunchy chewy "
    "juicy ripe tasty yummy pretty beautiful lovely ugly plain fancy simple colorful striped spotted dotted "
    "painted patched torn twisted curly straight crooked bent flat thick thin deep shallow hollow empty full "
    "glowing twinkling shimmering dull ancient young modern wild tame friendly grumpy cheerful jolly merry "
    "gloomy stormy windy sunny cloudy foggy frosty snowy rainy breezy cozy chilly hot cool icy fiery noisy "
    "peaceful busy lazy quick slow fast swift steady wobbly shaky sturdy fragile delicate precious rare "
    "common ordinary wonderful marvelous mysterious hidden forgotten famous humble proud"
)
COLOURS = _words("red blue green yellow purple orange pink white black brown silver gray gold violet teal")
FEELINGS = _words(
    "happy sad scared excited proud worried calm angry surprised curious lonely brave tired hopeful grateful "
    "nervous cheerful shy bored glad thrilled upset amazed puzzled relieved jealous embarrassed confused "
    "delighted frightened joyful content eager anxious"
)
FOODS = _words(
    "apples bread soup berries honey cheese carrots cookies pie rice noodles pancakes grapes nuts jam muffins "
    "porridge oatmeal biscuits cupcakes waffles toast eggs beans peas corn potatoes tomatoes cucumbers "
    "lettuce spinach broccoli pears plums peaches cherries melons oranges lemonade milk tea cocoa juice "
    "pudding custard jelly candy chocolate popcorn pretzels crackers sandwiches dumplings pasta pizza"
)
VERBS = _words(
    "found lost carried painted cleaned fixed hid shared dropped held opened wrapped washed polished counted "
    "hugged showed lifted chased kept built made drew buried borrowed bought caught collected decorated "
    "dried filled folded gathered guarded hung kicked knitted mended mixed packed pulled pushed rolled "
    "saved sewed shook spun stacked tossed traded tied weighed won"
)
MOVES = _words(
    "walked ran hopped skipped climbed wandered raced tiptoed marched danced strolled jogged dashed crawled "
    "waddled galloped trotted swam flew sailed paddled rode slid stomped zoomed"
)
SOUNDS = _words(
    "bang crash thump whoosh buzz squeak creak rumble splash pop click ding hum roar chirp hoot tweet giggle whisper"
)
